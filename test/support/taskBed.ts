import type { CatalogClient } from './catalogFixture.ts';

export interface TaskBed {
  tree: Awaited<ReturnType<CatalogClient['bootstrap']>>;
  workflow: string;
  connection: string;
  /** A create-and-run body (spec 4.2 required fields) for a task under the bed's workflow and connection. */
  taskBody(name: string, operatorLaui: string, extra?: Record<string, unknown>): Record<string, unknown>;
}

/** What every task test starts from: an account tree, a workflow folder and one connection. */
export const taskBed = async (admin: CatalogClient, accountName: string, connectionFields: Record<string, unknown>): Promise<TaskBed> => {
  const tree = await admin.bootstrap(accountName);
  const workflow = await admin.createOk({ item_type: 'folder.workflow', name: 'wf', parent_laui: tree.folders.workflow });
  const connection = await admin.createOk({ item_type: 'connection', parent_laui: tree.folders.connection, ...connectionFields });
  return {
    tree,
    workflow,
    connection,
    taskBody: (name, operatorLaui, extra = {}) => ({
      name,
      parent_laui: workflow,
      project_laui: tree.project_laui,
      account_laui: tree.account_laui,
      operator_laui: operatorLaui,
      connection_laui: connection,
      ...extra,
    }),
  };
};
