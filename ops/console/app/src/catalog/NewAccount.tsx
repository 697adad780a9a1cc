import { useId, useState } from 'react';
import { Notice } from '../shell/Notice.tsx';
import { useAction } from '../shell/useAction.ts';
import type { TreeStore } from './TreeStore.ts';
import { api } from '../api.ts';
import { itemPath, navigate } from '../router.ts';

/** POST /catalog/bootstrap: an account with its standard folders and a first project. */
export const NewAccount = ({ store }: { store: TreeStore }) => {
  const [name, setName] = useState('');
  const [project, setProject] = useState('main');
  const id = useId();
  const bootstrap = useAction(async () => {
    const created = await api<{ account_laui: string; project_laui: string }>('/api/v1/catalog/bootstrap', { body: { account_name: name, project_name: project } });
    await store.loadRoots();
    navigate(itemPath(created.project_laui));
  });
  return (
    <form
      className="row"
      aria-label="New account"
      onSubmit={(event) => {
        event.preventDefault();
        bootstrap.run();
      }}
    >
      <div className="field">
        <label htmlFor={`${id}-account`}>Account name</label>
        <input id={`${id}-account`} required value={name} onChange={(event) => setName(event.target.value)} />
      </div>
      <div className="field">
        <label htmlFor={`${id}-project`}>First project</label>
        <input id={`${id}-project`} required value={project} onChange={(event) => setProject(event.target.value)} />
      </div>
      <div className="actions">
        <button type="submit" className="primary" disabled={bootstrap.running}>
          New account
        </button>
      </div>
      {bootstrap.failure ? <Notice kind="error">{bootstrap.failure}</Notice> : null}
    </form>
  );
};
