import { validateRequest } from '../../shared/validation/validateRequest.ts';
import type { AccessPatch } from '../group/applyAccessPatch.ts';
import { accessPatchSchema, validateAccessPatch } from '../group/validateAccessPatch.ts';

/** An item's access_patch has the group's shape: 422 list entries for any malformed part (EVERYONE only as a viewer). */
export const parseAccessPatch = (value: unknown): AccessPatch => {
  const wrapped = validateRequest<{ access_patch: AccessPatch }>(
    { type: 'object', properties: { access_patch: accessPatchSchema }, required: ['access_patch'] },
    { access_patch: value },
  );
  validateAccessPatch(wrapped.access_patch, 'item');
  return wrapped.access_patch;
};
