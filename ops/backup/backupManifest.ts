/** What a backup file (`cli backup`) holds first: which files follow, and how to check them. */
export const BACKUP_FORMAT = 'pipeline-orchestrator-backup';
/** Raised when the layout changes; a restore refuses a version it does not know. */
export const BACKUP_FORMAT_VERSION = 1;
/** The event log's file in DATA_DIR. */
export const EVENT_LOG = 'events.sqlite';

export interface ManifestFile {
  /** Relative to DATA_DIR, `/`-separated; the tar entry is `data/<path>`. */
  path: string;
  size: number;
  sha256: string;
}

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  version: number;
  service_version: string;
  created_at: string;
  /** The newest event position in the backed-up log: everything up to it is in the backup. */
  log_head_position: number;
  files: ManifestFile[];
}

const SAFE_PATH = /^(?!\/)(?!.*(?:^|\/)\.\.(?:\/|$))[A-Za-z0-9._\-/]{1,500}$/;

/** The manifest of a backup file, checked before anything is written: a foreign or newer file is refused with why. */
export const parseManifest = (text: string): BackupManifest => {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error('not a backup of this service: its manifest is not JSON');
  }
  const manifest = value as Partial<BackupManifest>;
  if (manifest.format !== BACKUP_FORMAT) throw new Error('not a backup of this service (its manifest names another format)');
  if (manifest.version !== BACKUP_FORMAT_VERSION) throw new Error(`a backup of format version ${String(manifest.version)}, which this version of the service does not read (it reads ${BACKUP_FORMAT_VERSION})`);
  if (!Array.isArray(manifest.files)) throw new Error('a damaged backup: its manifest lists no files');
  const seen = new Set<string>();
  for (const file of manifest.files) {
    // A path must stay inside DATA_DIR: no absolute paths, no `..`.
    if (typeof file?.path !== 'string' || !SAFE_PATH.test(file.path) || typeof file.size !== 'number' || !/^[0-9a-f]{64}$/.test(String(file.sha256))) throw new Error(`a damaged backup: its manifest lists a bad file entry (${JSON.stringify(file).slice(0, 200)})`);
    if (seen.has(file.path)) throw new Error(`a damaged backup: its manifest lists ${file.path} twice`);
    seen.add(file.path);
  }
  if (!seen.has(EVENT_LOG)) throw new Error(`a damaged backup: its manifest lists no event log (${EVENT_LOG})`);
  return manifest as BackupManifest;
};
