import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { GuideTexts } from '../../command-side/ai/generatePrompt.ts';

/** The project's guide for writing operators and actions: its two sections are the prompts' guides. */
export const GUIDE_FILE = fileURLToPath(new URL('../../docs/writing-code.md', import.meta.url));

/** The text of a `## heading` section, up to the next `## ` heading; empty when the heading is missing. */
export const sectionOf = (markdown: string, heading: string): string => {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => line.trim() === `## ${heading}`);
  if (start < 0) return '';
  const end = lines.findIndex((line, index) => index > start && line.startsWith('## '));
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n').trim();
};

/**
 * include_guide_doc and include_install_guide (spec 4.11): the sections "Operators and actions" and
 * "Installing dependencies (bashblock)" of docs/writing-code.md, read once at start (a missing file
 * gives empty guides, which the prompt leaves out).
 */
export const loadGuideTexts = (file: string = GUIDE_FILE): GuideTexts => {
  let markdown = '';
  try {
    markdown = readFileSync(file, 'utf8');
  } catch {
    // no guide: the prompts go without it
  }
  return { guide: sectionOf(markdown, 'Operators and actions'), installGuide: sectionOf(markdown, 'Installing dependencies (bashblock)') };
};
