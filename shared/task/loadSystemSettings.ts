import type { Laui } from '../ids.ts';
import type { Logger } from '../ports/Logger.ts';
import type { ItemDoc } from '../read-models/ItemDoc.ts';
import type { Collection } from '../read-store/ReadStore.ts';
import { resolveSystemSettings, type SystemSettings } from './systemSettings.ts';

export interface SystemSettingsSources {
  items: Collection<ItemDoc>;
  /** Who a user is today (the access control's principalOf): null for a group or a user that is gone. */
  access: { principalOf(userLaui: Laui): Promise<{ isAdmin: boolean } | null> };
  /** Where an ignored item is reported, once per item; without one (query-side reads) it is not. */
  logger?: Logger;
}

/** The principals a system config's trust hangs on: its owners and whoever changed it last. */
const writersOf = (doc: ItemDoc): Laui[] => [...new Set([...Object.keys(doc.access?.owners ?? {}), ...(doc.updated_by ? [doc.updated_by] : [])])];

/** Items already reported, per logger (one per service): a warning per item, not one per run. */
const reported = new WeakMap<Logger, Set<Laui>>();

const reportOnce = (logger: Logger | undefined, doc: ItemDoc, reason: string): void => {
  if (logger === undefined) return;
  const seen = reported.get(logger) ?? new Set<Laui>();
  reported.set(logger, seen);
  if (seen.has(doc.laui)) return;
  seen.add(doc.laui);
  logger.log({
    level: 'warning',
    category: 'TASK',
    step: 'settings',
    message: `System config ${doc.name} (${doc.laui}) is ignored: ${reason}; only administrators' system configs apply`,
    item_laui: doc.laui,
  });
};

/**
 * The service-wide settings: config items of config_type `system` (docs/decisions.md). Only
 * administrators may write one now, but items written before that rule may be anyone's, so an item
 * counts only while every owner of it and its last writer are administrators (checked at each load:
 * a demoted administrator's items stop counting). Others are left out, and reported once.
 */
export const loadSystemSettings = async (sources: SystemSettingsSources): Promise<SystemSettings> => {
  // The stored documents themselves (peekFind): only read here, and this runs at every run's
  // validation and pick-up, where a copy of every system config each time bought nothing.
  const configs = await sources.items.peekFind({ where: { item_type: 'config', config_type: 'system', is_deleted: false } });
  // Most configs share their writers: each is looked up once per load.
  const admins = new Map<Laui, Promise<boolean>>();
  const isAdmin = (laui: Laui): Promise<boolean> => {
    let known = admins.get(laui);
    if (known === undefined) {
      known = sources.access.principalOf(laui).then((principal) => principal?.isAdmin === true);
      admins.set(laui, known);
    }
    return known;
  };
  const trusted: ItemDoc[] = [];
  for (const doc of configs) {
    const writers = writersOf(doc);
    const strangers = (await Promise.all(writers.map(async (laui) => ((await isAdmin(laui)) ? null : laui)))).filter((laui) => laui !== null);
    if (writers.length > 0 && strangers.length === 0) trusted.push(doc);
    else reportOnce(sources.logger, doc, strangers.length > 0 ? `owned or last changed by ${strangers.join(', ')}, not an administrator` : 'it has no owner');
  }
  return resolveSystemSettings(trusted.map((doc) => ({ name: doc.name, content: (doc.content as Record<string, unknown>) ?? {}, config_type: 'system' }))).settings;
};
