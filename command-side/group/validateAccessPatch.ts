import { unprocessable, type ValidationEntry } from '../../shared/errors.ts';
import { ROLES } from '../../shared/access/permissions.ts';
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

/** The entries a 422 list body reports for the role maps of an already shape-checked patch. */
export const accessPatchErrors = (patch: AccessPatch | undefined, loc: ReadonlyArray<string | number>): ValidationEntry[] => {
  const entries: ValidationEntry[] = [];
  for (const part of ['add', 'remove'] as const) {
    for (const role of ROLES) {
      for (const [principal, value] of Object.entries(patch?.[part]?.[role] ?? {})) {
        const at = [...loc, part, role, principal];
        if (!isLaui(principal)) entries.push(invalidLauiEntry(at, principal));
        if ((value as unknown) !== 'true') {
          entries.push({ type: 'literal_error', loc: at, msg: "Input should be 'true'", input: value, ctx: { expected: "'true'" } });
        }
      }
    }
  }
  return entries;
};

/** Throws the 422 list when a role map holds a key that is no LAUI or a value other than "true". */
export const validateAccessPatch = (patch: AccessPatch | undefined, loc: ReadonlyArray<string | number> = ['body', 'access_patch']): void => {
  const entries = accessPatchErrors(patch, loc);
  if (entries.length > 0) throw unprocessable(entries);
};
