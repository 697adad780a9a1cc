import type { QueryTargetFactory } from '../../shared/ports/QueryTarget.ts';
import { awsQueryTarget } from './awsQueryTarget.ts';
import { azureQueryTarget } from './azureQueryTarget.ts';
import { cloudQuerySettingsFromEnv } from './cloudQuerySettings.ts';
import type { CloudTargetDeps } from './cloudTargetDeps.ts';
import { EngineSlots } from './engineSlots.ts';
import { gcpQueryTarget } from './gcpQueryTarget.ts';

/** The cloud targets by canonical connection type, sharing one set of settings and engine slots. */
export const cloudTargetFactoriesWith = (deps: Omit<CloudTargetDeps, 'slots'> & { slots?: EngineSlots }): Record<string, QueryTargetFactory> => {
  const shared: CloudTargetDeps = { ...deps, slots: deps.slots ?? new EngineSlots(deps.settings.maxConcurrent) };
  return {
    'connection.aws': (connection) => awsQueryTarget(connection, shared),
    'connection.gcp': (connection) => gcpQueryTarget(connection, shared),
    'connection.azure': (connection) => azureQueryTarget(connection, shared),
  };
};

/**
 * The cloud targets with the settings of this process's environment (README: DUCKDB_EXTENSION_DIRECTORY,
 * QUERY_OBJECTS_*, QUERY_ENGINE_*, QUERY_CLOUD_AMBIENT_CREDENTIALS), read on first use so that a
 * malformed value fails the first cloud statement with the variable's name rather than any import.
 */
let fromEnv: Record<string, QueryTargetFactory> | null = null;
const lazy = (type: string): QueryTargetFactory => (connection) => {
  fromEnv ??= cloudTargetFactoriesWith({ settings: cloudQuerySettingsFromEnv(process.env) });
  return (fromEnv[type] as QueryTargetFactory)(connection);
};

export const cloudTargetFactories: Record<string, QueryTargetFactory> = {
  'connection.aws': lazy('connection.aws'),
  'connection.gcp': lazy('connection.gcp'),
  'connection.azure': lazy('connection.azure'),
};
