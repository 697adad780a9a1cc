import { unprocessable, type ValidationEntry } from '../../shared/errors.ts';
import { EVERYONE, ROLES, type Role } from '../../shared/access/permissions.ts';
import { isLaui } from '../../shared/ids.ts';
import { invalidLauiEntry } from '../../shared/validation/validateRequest.ts';
import type { AccessPatch } from './applyAccessPatch.ts';

const roleMaps = {
  type: 'object',
  properties: Object.fromEntries(ROLES.map((role) => [role, { type: 'object' }])),
  additionalProperties: false,
};

/**
 * The shape of an access patch for a request schema (ajv): unknown parts or roles are refused.
 * Keys and values of the role maps are checked by `validateAccessPatch`, which can name the key.
 */
export const accessPatchSchema = {
  type: 'object',
  properties: { add: roleMaps, remove: roleMaps },
  additionalProperties: false,
};

/**
 * Where EVERYONE may be added (shared/access/permissions.ts): an item's viewers (`item`), nowhere in
 * a group (`group`: group membership is computed from the caller's own LAUI and would not see it).
 */
export type PatchTarget = 'item' | 'group';

const everyoneMayHold = (target: PatchTarget, role: Role): boolean => target === 'item' && role === 'viewers';

/** The entries a 422 list body reports for the role maps of an already shape-checked patch. */
export const accessPatchErrors = (patch: AccessPatch | undefined, loc: ReadonlyArray<string | number>, target: PatchTarget = 'group'): ValidationEntry[] => {
  const entries: ValidationEntry[] = [];
  for (const part of ['add', 'remove'] as const) {
    for (const role of ROLES) {
      for (const [principal, value] of Object.entries(patch?.[part]?.[role] ?? {})) {
        const at = [...loc, part, role, principal];
        if (!isLaui(principal)) entries.push(invalidLauiEntry(at, principal));
        // Removing it is always allowed: it undoes a share (or is a no-op).
        if (principal === EVERYONE && part === 'add' && !everyoneMayHold(target, role)) {
          const msg = target === 'item' ? 'everyone (000000000000000000000000) can only be a viewer' : 'everyone (000000000000000000000000) cannot hold a role in a group';
          entries.push({ type: 'value_error', loc: at, msg, input: principal });
        }
        if ((value as unknown) !== 'true') {
          entries.push({ type: 'literal_error', loc: at, msg: "Input should be 'true'", input: value, ctx: { expected: "'true'" } });
        }
      }
    }
  }
  return entries;
};

/** Throws the 422 list when a role map holds a key that is no LAUI or a value other than "true". */
export const validateAccessPatch = (patch: AccessPatch | undefined, target: PatchTarget = 'group', loc: ReadonlyArray<string | number> = ['body', 'access_patch']): void => {
  const entries = accessPatchErrors(patch, loc, target);
  if (entries.length > 0) throw unprocessable(entries);
};
