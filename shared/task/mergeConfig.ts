/**
 * Config merge of a task run (spec 4.2 Execution rule 6). Pure: the caller loads the config items.
 *
 * Levels, lowest to highest precedence:
 *   0. the `content` of the config items that are children of the task's parent workflow (list order),
 *   1. the `content` of the task's attached configs (`attached_config_lauis` order),
 *   2. the task's inline `config`.
 * Within a level the first writer of a key wins; a higher level always overrides a lower one.
 *
 * - Top-level keys other than `parameters`, `not_overridable` and `overridable` (total_retries,
 *   retry_interval, any extra key) are replaced whole: no deep merge.
 * - `parameters` merge per parameter name: within a level the first config that names a parameter
 *   wins; a higher level replaces a lower level's value, unless the name is locked.
 * - Locks are declared by the lower level and protect its values from every higher level:
 *   - `not_overridable: [names]` locks those names once the declaring level is merged.
 *   - `overridable: [names]`, when non-empty, is an allowlist: every parameter the declaring level
 *     contributes and that is not listed gets locked too. Empty or absent: no allowlist.
 *   - A name in both lists is locked (not_overridable wins).
 *   - Locks accumulate upward and cannot be lifted by a higher level (its `overridable` only speaks
 *     about its own parameters), otherwise a task could unlock what its workflow locked.
 *   - A lock protects an existing value only: a locked name that no lower level set can still be set
 *     by a higher level (there is nothing to override), and is then itself locked.
 *   - Refused overrides are reported in `refused` (for logs and diagnostics), not as errors.
 * - The merged config carries `not_overridable` (every locked name, first-declared order) and
 *   `overridable` (union of the declared lists, first-declared order).
 * - After merging, `total_retries` and `retry_interval` come from the merged config when they are
 *   non-negative integers there, else from the task's own fields (spec 2.4 defaults 0 and 1); a
 *   present but invalid value is ignored with a warning.
 * - A level entry whose content is not an object, a `parameters` that is not an object and a lock list
 *   that is not an array of strings are ignored with a warning.
 */

export type ConfigObject = Record<string, unknown>;

export interface ConfigMergeInput {
  /** Contents of the parent workflow's child config items, in list order. */
  workflowConfigs: readonly unknown[];
  /** Contents of the attached config items, in attached_config_lauis order. */
  attachedConfigs: readonly unknown[];
  /** The task's inline config. */
  inlineConfig: unknown;
  /** The task's own values, used when the merged config does not set them. */
  taskTotalRetries?: number;
  taskRetryInterval?: number;
}

export interface MergedConfig extends ConfigObject {
  parameters: Record<string, unknown>;
  not_overridable: string[];
  overridable: string[];
}

export interface ConfigMergeResult {
  config: MergedConfig;
  total_retries: number;
  retry_interval: number;
  /** Parameter overrides refused because of a lock. */
  refused: Array<{ parameter: string; level: ConfigLevel }>;
  warnings: string[];
}

export type ConfigLevel = 'workflow' | 'attached' | 'inline';

const SPECIAL_KEYS = new Set(['parameters', 'not_overridable', 'overridable']);

const isObject = (value: unknown): value is ConfigObject =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

const isNonNegativeInteger = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0;

interface LevelMerge {
  keys: ConfigObject;
  parameters: Record<string, unknown>;
  notOverridable: string[];
  overridable: string[];
}

function pushUnique(target: string[], names: readonly string[]): void {
  for (const name of names) if (!target.includes(name)) target.push(name);
}

function mergeLevel(level: ConfigLevel, configs: readonly unknown[], warnings: string[]): LevelMerge {
  const merged: LevelMerge = { keys: {}, parameters: {}, notOverridable: [], overridable: [] };
  configs.forEach((config, index) => {
    const where = `${level} config ${index}`;
    if (!isObject(config)) {
      if (config !== null && config !== undefined) warnings.push(`${where}: not an object; ignored`);
      return;
    }
    for (const [key, value] of Object.entries(config)) {
      if (key === 'parameters') {
        if (!isObject(value)) {
          warnings.push(`${where}: parameters is not an object; ignored`);
          continue;
        }
        for (const [name, parameter] of Object.entries(value)) {
          if (!Object.hasOwn(merged.parameters, name)) merged.parameters[name] = parameter;
        }
      } else if (key === 'not_overridable' || key === 'overridable') {
        if (!Array.isArray(value) || !value.every((name) => typeof name === 'string')) {
          warnings.push(`${where}: ${key} is not a list of names; ignored`);
          continue;
        }
        pushUnique(key === 'not_overridable' ? merged.notOverridable : merged.overridable, value as string[]);
      } else if (!Object.hasOwn(merged.keys, key)) {
        merged.keys[key] = value;
      }
    }
  });
  return merged;
}

export function mergeTaskConfig(input: ConfigMergeInput): ConfigMergeResult {
  const warnings: string[] = [];
  const refused: ConfigMergeResult['refused'] = [];
  const keys: ConfigObject = {};
  const parameters: Record<string, unknown> = {};
  const locked: string[] = [];
  const overridable: string[] = [];

  const levels: Array<[ConfigLevel, readonly unknown[]]> = [
    ['workflow', input.workflowConfigs],
    ['attached', input.attachedConfigs],
    ['inline', [input.inlineConfig]],
  ];
  for (const [level, configs] of levels) {
    const merged = mergeLevel(level, configs, warnings);
    for (const [key, value] of Object.entries(merged.keys)) {
      if (!SPECIAL_KEYS.has(key)) keys[key] = value;
    }
    for (const [name, value] of Object.entries(merged.parameters)) {
      if (locked.includes(name) && Object.hasOwn(parameters, name)) {
        refused.push({ parameter: name, level });
        continue;
      }
      parameters[name] = value;
    }
    pushUnique(locked, merged.notOverridable);
    if (merged.overridable.length > 0) {
      pushUnique(
        locked,
        Object.keys(merged.parameters).filter((name) => !merged.overridable.includes(name)),
      );
    }
    pushUnique(overridable, merged.overridable);
  }

  const config: MergedConfig = { ...keys, parameters, not_overridable: locked, overridable };
  const pick = (key: 'total_retries' | 'retry_interval', fallback: number): number => {
    if (!Object.hasOwn(keys, key)) return fallback;
    const value = keys[key];
    if (isNonNegativeInteger(value)) return value;
    warnings.push(`${key} must be a non-negative integer, got ${JSON.stringify(value)}; the task's value is kept`);
    return fallback;
  };
  return {
    config,
    total_retries: pick('total_retries', input.taskTotalRetries ?? 0),
    retry_interval: pick('retry_interval', input.taskRetryInterval ?? 1),
    refused,
    warnings,
  };
}
