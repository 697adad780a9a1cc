/** One sample of the Prometheus text format: `name{label="value",...} value`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  /** `# TYPE` lines: family name to its type (counter, gauge, histogram...). */
  types: Map<string, string>;
  samples: Sample[];
  /** The value of the one sample of `name` with exactly these labels (undefined: none). */
  value(name: string, labels?: Record<string, string>): number | undefined;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

const unescape = (text: string): string => text.replace(/\\(["\\n])/g, (_match, char: string) => (char === 'n' ? '\n' : char));

/** Parses the text format (version 0.0.4) strictly enough for tests: a line that is neither a comment nor a sample throws. */
export const parseExposition = (text: string): Exposition => {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const type = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (type?.[1] && type[2]) types.set(type[1], type[2]);
      continue;
    }
    const match = SAMPLE.exec(line);
    if (!match?.[1] || match[3] === undefined) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name = '', value = ''] of (match[2] ?? '').matchAll(LABEL)) labels[name] = unescape(value);
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  const sameLabels = (a: Record<string, string>, b: Record<string, string>) =>
    Object.keys(a).length === Object.keys(b).length && Object.entries(b).every(([key, value]) => a[key] === value);
  return {
    types,
    samples,
    value: (name, labels = {}) => samples.find((sample) => sample.name === name && sameLabels(sample.labels, labels))?.value,
  };
};
