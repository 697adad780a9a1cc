import { useId, useState, type FormEvent } from 'react';
import { Notice } from '../shell/Notice.tsx';
import type { TreeStore } from './TreeStore.ts';
import { api, errorText } from '../api.ts';
import { itemPath, navigate } from '../router.ts';

/** POST /catalog/bootstrap: an account with its standard folders and a first project. */
export const NewAccount = ({ store }: { store: TreeStore }) => {
  const [name, setName] = useState('');
  const [project, setProject] = useState('main');
  const [failure, setFailure] = useState<string | null>(null);
  const id = useId();
  const submit = async (event: FormEvent): Promise<void> => {
    event.preventDefault();
    setFailure(null);
    try {
      const created = await api<{ account_laui: string; project_laui: string }>('/api/v1/catalog/bootstrap', { body: { account_name: name, project_name: project } });
      await store.loadRoots();
      navigate(itemPath(created.project_laui));
    } catch (error) {
      setFailure(errorText(error));
    }
  };
  return (
    <form className="row" onSubmit={(event) => void submit(event)} aria-label="New account">
      <div className="field">
        <label htmlFor={`${id}-account`}>Account name</label>
        <input id={`${id}-account`} required value={name} onChange={(event) => setName(event.target.value)} />
      </div>
      <div className="field">
        <label htmlFor={`${id}-project`}>First project</label>
        <input id={`${id}-project`} required value={project} onChange={(event) => setProject(event.target.value)} />
      </div>
      <div className="actions">
        <button type="submit" className="primary">
          New account
        </button>
      </div>
      {failure ? <Notice kind="error">{failure}</Notice> : null}
    </form>
  );
};
