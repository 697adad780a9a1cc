import { fileURLToPath } from 'node:url';

/** The console's sources (Vite project) and where their build goes. */
export const CONSOLE_APP = fileURLToPath(new URL('./app', import.meta.url));
export const CONSOLE_DIST = fileURLToPath(new URL('./dist', import.meta.url));
