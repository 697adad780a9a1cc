import { expect } from 'chai';
import type { TestService } from './testService.ts';

type FolderKind = 'trash' | 'users' | 'action' | 'asset' | 'workflow' | 'operator' | 'payload' | 'connection' | 'bootstrap' | 'config' | 'ai';

/** A logged-in caller with helpers for the catalog endpoints. */
export const catalogClient = (svc: Pick<TestService, 'client'>, token: string) => {
  const client = svc.client();
  const api = {
    token,
    create: (body: Record<string, unknown>) => client.post('/api/v1/catalog/create', { json: body, token }),
    async createOk(body: Record<string, unknown>): Promise<string> {
      const reply = await api.create(body);
      expect(reply.status, reply.text).to.equal(200);
      return (reply.json as { item_laui: string }).item_laui;
    },
    get: (query: Record<string, string | number | boolean>) =>
      client.get(`/api/v1/catalog/get?${new URLSearchParams(Object.entries(query).map(([key, value]) => [key, String(value)])).toString()}`, { token }),
    search: (body: Record<string, unknown>) => client.post('/api/v1/catalog/search', { json: body, token }),
    post: (path: string, body?: unknown) => client.post(`/api/v1/catalog${path}`, body === undefined ? { token } : { json: body, token }),
    getPath: (path: string) => client.get(`/api/v1/catalog${path}`, { token }),
    async bootstrap(account: string, project = 'main') {
      const reply = await api.post('/bootstrap', { account_name: account, project_name: project });
      expect(reply.status, reply.text).to.equal(200);
      return reply.json as { account_laui: string; project_laui: string; folders: Record<FolderKind, string> };
    },
  };
  return api;
};

export type CatalogClient = ReturnType<typeof catalogClient>;

export const createUser = async (svc: TestService, adminToken: string, username: string): Promise<{ laui: string; token: string }> => {
  const created = await svc.client().post('/api/v1/user/create', {
    json: { username, email: `${username}@example.com`, password: 'password-123', must_change_password: false },
    token: adminToken,
  });
  expect(created.status, created.text).to.equal(200);
  const { token } = await svc.login(username, 'password-123');
  return { laui: (created.json as { user_laui: string }).user_laui, token };
};

/** Polls GET /catalog/get until `done` holds for the item, or fails naming its last state. */
export const waitForItem = async <T extends Record<string, unknown>>(api: CatalogClient, laui: string, done: (item: T) => boolean, timeoutMs = 20_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const item = (await api.get({ item_laui: laui })).json as T;
    if (done(item)) return item;
    if (Date.now() > deadline) throw new Error(`item ${laui} stuck in state ${String(item.state)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};
