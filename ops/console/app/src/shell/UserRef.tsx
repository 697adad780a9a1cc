import { useResolved } from './useResolved.ts';
import { userName, type UserName } from './userNames.ts';

/** A user named by id in a record: username and email when a read route the caller has tells them (userNames.ts). */
export const UserRef = ({ laui }: { laui: string }) => {
  const user = useResolved<UserName | null>(laui, null, userName);
  if (!user) {
    return (
      <span className="mono" title="Other users' names show to administrators and auditors">
        user {laui}
      </span>
    );
  }
  return (
    <span className="user-ref" title={laui}>
      {user.username}
      {user.email ? <span className="hint"> &lt;{user.email}&gt;</span> : null}
      {user.you ? <span className="hint"> (you)</span> : null}
    </span>
  );
};
