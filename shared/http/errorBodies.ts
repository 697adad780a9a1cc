/**
 * JSON Schemas of the error bodies the facade renders (ops/http/errorMiddleware.ts), for the
 * OpenAPI document. The document's test checks real 4xx answers against them.
 */

/** `{detail: <string>}`: most errors (spec section 7). */
export const detailSchema = {
  type: 'object',
  properties: { detail: { type: 'string' } },
  required: ['detail'],
} as const;

/** One entry of the 422 list form (shared/errors.ts ValidationEntry, built by validateRequest). */
export const validationEntrySchema = {
  type: 'object',
  properties: {
    type: { type: 'string', description: 'What is wrong: missing, extra_forbidden, enum, string_type, value_error...' },
    loc: { type: 'array', items: { type: ['string', 'integer'] }, description: 'Where: body, query, path, cookie or header, then the field path' },
    msg: { type: 'string' },
    input: { description: 'The value that was refused (bounded)' },
    ctx: { type: 'object' },
  },
  required: ['type', 'loc', 'msg'],
} as const;

/** 422 in the list form: one entry per problem. */
export const validationErrorSchema = {
  type: 'object',
  properties: { detail: { type: 'array', items: validationEntrySchema } },
  required: ['detail'],
} as const;

/** `{detail: <object>}`: the errors whose detail is structured (a summary and its context, pagination bounds...). */
export const objectDetailSchema = {
  type: 'object',
  properties: { detail: { type: 'object' } },
  required: ['detail'],
} as const;

/** `{detail}` of any of the spec's forms: a string, an object or a list of entries. */
export const anyDetailSchema = {
  type: 'object',
  properties: { detail: { type: ['string', 'object', 'array'] } },
  required: ['detail'],
} as const;
