/**
 * System settings: config items with config_type `system` (spec 2.3), read by the task pipeline, the
 * scheduler and the workers. Pure: the caller loads the config items.
 *
 * Storage form: each key of a system config item's `content` is one setting, e.g.
 * `{ name: 'scheduler', config_type: 'system', content: { project_scheduler_interval: 10 } }`.
 * Per-project scheduler intervals are keys `<project_name>_cron_interval` (spec 4.5).
 *
 * Precedence: items are applied in ascending order of `name` (code-point order; equal names keep input
 * order); a later item overrides a key set by an earlier one. So `00-base` < `10-site` < `zz-override`.
 * Deleted items (`deleted_at` set) and items whose `config_type` is given and is not `system` are skipped.
 * A value of the wrong type is ignored (the earlier value or the default stays) and reported in `warnings`.
 * Unknown keys are kept as-is in `extra` (other features own them) without a warning.
 */

/** `{ "<connection subtype>": ["<operator subtype>", ...] }`. Key `*` applies to connection subtypes not listed; value `*` allows any operator subtype. */
export type ConnectionOperatorMapping = Record<string, string[]>;

export interface SystemSettings {
  /** Spec 4.2 rule 5: check the connection-operator mapping only when true. */
  enforce_connection_operator_mapping: boolean;
  connection_operator_mapping: ConnectionOperatorMapping;
  /** A running task whose run is older than this becomes `timeout`. */
  check_completion_timeout_seconds: number;
  /** Minimum timeout of an action (spec 2.5). */
  action_timeout_seconds: number;
  /** Seconds between two scheduler cycles of a project (spec 4.5). */
  project_scheduler_interval: number;
  /** `<project_name>_cron_interval` overrides, by project name. */
  project_cron_intervals: Record<string, number>;
  /** How often workers write task heartbeats. */
  heartbeat_interval_seconds: number;
  /** A running task whose latest heartbeat is older than this is stale (its queue slot may be reclaimed). */
  stale_heartbeat_seconds: number;
  /** Unknown keys, last writer wins, unvalidated. */
  extra: Record<string, unknown>;
}

/** Operator subtypes seen in the service: `sql` (database code) and the two worker runtimes. */
export const DEFAULT_CONNECTION_OPERATOR_MAPPING: ConnectionOperatorMapping = {
  postgresql: ['sql', 'python', 'javascript'],
  mysql: ['sql', 'python', 'javascript'],
  aws: ['python', 'javascript'],
  gcp: ['python', 'javascript'],
  azure: ['python', 'javascript'],
  '*': ['python', 'javascript'],
};

export const DEFAULT_SYSTEM_SETTINGS: Readonly<SystemSettings> = Object.freeze({
  enforce_connection_operator_mapping: false,
  connection_operator_mapping: DEFAULT_CONNECTION_OPERATOR_MAPPING,
  check_completion_timeout_seconds: 3600,
  action_timeout_seconds: 300,
  project_scheduler_interval: 5,
  project_cron_intervals: {},
  heartbeat_interval_seconds: 10,
  stale_heartbeat_seconds: 60,
  extra: {},
});

/** A config item of config_type `system`: service-wide settings, written by administrators only. */
export const isSystemConfig = (itemType: string, fields: Readonly<Record<string, unknown>>): boolean => itemType === 'config' && fields.config_type === 'system';

export interface SystemConfigItem {
  name: string;
  content: Record<string, unknown>;
  config_type?: string;
  deleted_at?: string | null;
}

export interface ResolvedSystemSettings {
  settings: SystemSettings;
  warnings: string[];
}

const CRON_INTERVAL_SUFFIX = '_cron_interval';

const isPositiveNumber = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value > 0;
const isPositiveInteger = (value: unknown): value is number => isPositiveNumber(value) && Number.isInteger(value);

function isMapping(value: unknown): value is ConnectionOperatorMapping {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  return Object.values(value).every(
    (allowed) => Array.isArray(allowed) && allowed.every((entry) => typeof entry === 'string' && entry !== ''),
  );
}

type Checked = { ok: true; value: unknown } | { ok: false; expected: string };

const CHECKS: Record<string, (value: unknown) => Checked> = {
  enforce_connection_operator_mapping: (value) =>
    typeof value === 'boolean' ? { ok: true, value } : { ok: false, expected: 'a boolean' },
  connection_operator_mapping: (value) =>
    isMapping(value)
      ? { ok: true, value: Object.fromEntries(Object.entries(value).map(([key, list]) => [key, [...list]])) }
      : { ok: false, expected: 'an object of string arrays' },
  check_completion_timeout_seconds: (value) =>
    isPositiveInteger(value) ? { ok: true, value } : { ok: false, expected: 'a positive integer' },
  action_timeout_seconds: (value) =>
    isPositiveInteger(value) ? { ok: true, value } : { ok: false, expected: 'a positive integer' },
  project_scheduler_interval: (value) =>
    isPositiveNumber(value) ? { ok: true, value } : { ok: false, expected: 'a positive number' },
  heartbeat_interval_seconds: (value) =>
    isPositiveNumber(value) ? { ok: true, value } : { ok: false, expected: 'a positive number' },
  stale_heartbeat_seconds: (value) =>
    isPositiveNumber(value) ? { ok: true, value } : { ok: false, expected: 'a positive number' },
};

const show = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
};

export function resolveSystemSettings(configItems: readonly SystemConfigItem[]): ResolvedSystemSettings {
  const settings: SystemSettings = {
    ...DEFAULT_SYSTEM_SETTINGS,
    connection_operator_mapping: { ...DEFAULT_SYSTEM_SETTINGS.connection_operator_mapping },
    project_cron_intervals: {},
    extra: {},
  };
  const warnings: string[] = [];
  const ordered = configItems
    .map((item, index) => ({ item, index }))
    .filter(({ item }) => (item.config_type === undefined || item.config_type === 'system') && !item.deleted_at)
    .sort((a, b) => (a.item.name < b.item.name ? -1 : a.item.name > b.item.name ? 1 : a.index - b.index));
  const writable = settings as unknown as Record<string, unknown>;
  for (const { item } of ordered) {
    const content = item.content;
    if (content === null || typeof content !== 'object' || Array.isArray(content)) {
      warnings.push(`system config ${item.name}: content is not an object; ignored`);
      continue;
    }
    for (const [key, value] of Object.entries(content)) {
      const check = Object.hasOwn(CHECKS, key) ? CHECKS[key] : undefined;
      if (check !== undefined) {
        const checked = check(value);
        if (checked.ok) writable[key] = checked.value;
        else warnings.push(`system config ${item.name}: ${key} must be ${checked.expected}, got ${show(value)}; ignored`);
      } else if (key.endsWith(CRON_INTERVAL_SUFFIX) && key.length > CRON_INTERVAL_SUFFIX.length) {
        if (isPositiveNumber(value)) settings.project_cron_intervals[key.slice(0, -CRON_INTERVAL_SUFFIX.length)] = value;
        else warnings.push(`system config ${item.name}: ${key} must be a positive number, got ${show(value)}; ignored`);
      } else {
        settings.extra[key] = value;
      }
    }
  }
  return { settings, warnings };
}

/** Seconds between scheduler cycles of a project: `<project_name>_cron_interval`, else project_scheduler_interval. */
export function projectSchedulerInterval(settings: SystemSettings, projectName: string): number {
  return Object.hasOwn(settings.project_cron_intervals, projectName)
    ? (settings.project_cron_intervals[projectName] as number)
    : settings.project_scheduler_interval;
}

/** Spec 4.5: a cron whose heartbeat is older than 3 intervals is dead (a missing heartbeat counts as dead). */
export function isCronHeartbeatDead(latestHeartbeat: Date | null, now: Date, intervalSeconds: number): boolean {
  return latestHeartbeat === null || now.getTime() - latestHeartbeat.getTime() > 3 * intervalSeconds * 1000;
}

/** Spec 2.5: an action's timeout in seconds is at least `action_timeout_seconds` (absent or invalid: the minimum). */
export function effectiveActionTimeout(timeout: unknown, settings: SystemSettings): number {
  const minimum = settings.action_timeout_seconds;
  return typeof timeout === 'number' && Number.isFinite(timeout) ? Math.max(timeout, minimum) : minimum;
}
