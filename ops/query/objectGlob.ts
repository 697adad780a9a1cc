/**
 * DuckDB's glob syntax over object keys: `*` any run of characters but `/`, `**` any run including
 * `/` (as a whole segment `**\/` also none at all), `?` one character but `/`, `[abc]`, `[a-z]` and
 * `[!abc]` one character of (or not of) a set. An object key is matched with it after listing
 * the prefix before the first wildcard; DuckDB then globs the local copies with the same pattern,
 * so a key this matches and DuckDB would not is fetched for nothing but never read.
 */

export const hasGlob = (path: string): boolean => /[*?[]/.test(path);

/** The part of `pattern` before its first wildcard: the listing prefix. */
export const globPrefix = (pattern: string): string => {
  const index = pattern.search(/[*?[]/);
  return index === -1 ? pattern : pattern.slice(0, index);
};

const escape = (text: string): string => text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');

export const globRegExp = (pattern: string): RegExp => {
  let source = '';
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i] as string;
    if (c === '*') {
      if (pattern[i + 1] === '*') {
        const wholeSegment = (i === 0 || pattern[i - 1] === '/') && pattern[i + 2] === '/';
        source += wholeSegment ? '(?:.*/)?' : '.*';
        i += wholeSegment ? 3 : 2;
      } else {
        source += '[^/]*';
        i += 1;
      }
    } else if (c === '?') {
      source += '[^/]';
      i += 1;
    } else if (c === '[') {
      const close = pattern.indexOf(']', i + 2);
      if (close === -1) {
        source += '\\[';
        i += 1;
      } else {
        let body = pattern.slice(i + 1, close);
        const negate = body.startsWith('!');
        if (negate) body = body.slice(1);
        source += `[${negate ? '^' : ''}${body.replace(/[\\\]^[]/g, '\\$&')}]`;
        i = close + 1;
      }
    } else {
      source += escape(c);
      i += 1;
    }
  }
  return new RegExp(`^${source}$`, 's');
};
