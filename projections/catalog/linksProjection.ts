import type { Projection } from '../runner/Projection.ts';
import type { LinkDoc } from '../../shared/read-models/LinkDoc.ts';

export const LINKS = 'links';

export const linksProjection: Projection<LinkDoc> = {
  name: 'links',
  collection: LINKS,
  indexes: [{ fields: ['parent_laui'] }, { fields: ['child_laui'] }, { fields: ['parent_laui', 'child_laui'] }],
  handles: new Set(['ItemCreated', 'LinkCreated', 'LinkRemoved']),
  documentId: (event) => {
    const data = event.data as Record<string, unknown>;
    if (event.type === 'ItemCreated') return typeof data.link_laui === 'string' ? data.link_laui : null;
    return event.streamId.startsWith('link-') ? event.streamId.slice('link-'.length) : null;
  },
  evolve: (doc, event) => {
    const data = event.data as Record<string, unknown>;
    switch (event.type) {
      case 'ItemCreated':
        return {
          id: String(data.link_laui),
          link_laui: String(data.link_laui),
          parent_laui: String(data.parent_laui),
          child_laui: String(data.laui),
          parent_type: String(data.parent_type ?? ''),
          child_type: String(data.item_type),
          true_parent: true,
          created_at: event.metadata.at,
          created_by: event.metadata.user_laui,
          created_seq: Number(event.position),
        };
      case 'LinkCreated':
        return {
          id: String(data.link_laui),
          link_laui: String(data.link_laui),
          parent_laui: String(data.parent_laui),
          child_laui: String(data.child_laui),
          parent_type: String(data.parent_type),
          child_type: String(data.child_type),
          true_parent: data.true_parent === true,
          created_at: event.metadata.at,
          created_by: event.metadata.user_laui,
          created_seq: Number(event.position),
        };
      case 'LinkRemoved':
        return null;
      default:
        return doc;
    }
  },
};
