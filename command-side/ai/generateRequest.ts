import { LAUI_PATTERN, lauiSchema, validateRequest } from '../../shared/validation/validateRequest.ts';
import { GENERATE_ITEM_TYPES, type GenerateItemType } from './generationFields.ts';

/** POST /ai/generate's body after validation (spec 4.11), defaults applied. */
export interface GenerateRequest {
  prompt: string;
  chat_laui: string;
  item_type: GenerateItemType;
  ai_provider: string;
  include_guide_doc: boolean;
  include_install_guide: boolean;
  messages: Array<{ role: string; content: string }> | null;
  generated_content: Record<string, unknown> | null;
  skill_content: string | null;
  session_id: string | null;
  connection_laui: string | null;
}

const optionalLaui = { type: ['string', 'null'], pattern: LAUI_PATTERN, default: null } as const;

/** Extra keys are ignored, as the spec's other bodies allow them. */
export const generateSchema = {
  type: 'object',
  properties: {
    prompt: { type: 'string' },
    chat_laui: lauiSchema,
    item_type: { type: 'string', enum: [...GENERATE_ITEM_TYPES] },
    ai_provider: { type: 'string' },
    include_guide_doc: { type: 'boolean', default: false },
    include_install_guide: { type: 'boolean', default: false },
    messages: {
      type: ['array', 'null'],
      items: { type: 'object', properties: { role: { type: 'string' }, content: { type: 'string' } }, required: ['role', 'content'] },
      default: null,
    },
    generated_content: { type: ['object', 'null'], default: null },
    skill_content: { type: ['string', 'null'], default: null },
    session_id: optionalLaui,
    connection_laui: optionalLaui,
  },
  required: ['prompt', 'chat_laui', 'item_type', 'ai_provider'],
} as const;

/** The body, or a 422 listing every problem (an unknown item_type's entry lists the allowed values). */
export const parseGenerateRequest = (body: Record<string, unknown>): GenerateRequest => validateRequest<GenerateRequest>(generateSchema, { ...body });
