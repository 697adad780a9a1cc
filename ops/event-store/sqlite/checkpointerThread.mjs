// Entry point of the event store's checkpointer thread. Worker threads do not inherit the tsx
// loader of the main thread (Node 20), so this plain module registers it for this thread, then
// loads the TypeScript body.
import { register } from 'tsx/esm/api';

register();
await import('./checkpointerMain.ts');
