import { expect } from 'chai';
import type { RunOutputDropped, RunOutputLine, RunStep } from '../../shared/ports/CodeRunner.ts';
import { completeUtf8, DEFAULT_RUN_OUTPUT_LIMITS, RunOutput, shownText, type RunOutputLimits } from './runOutput.ts';

/** A RunOutput whose lines and drop report are collected. */
function capture(limits: Partial<RunOutputLimits> = {}) {
  const lines: RunOutputLine[] = [];
  const dropped: RunOutputDropped[] = [];
  const output = new RunOutput({ line: (line) => lines.push(line), dropped: (summary) => dropped.push(summary) }, { ...DEFAULT_RUN_OUTPUT_LIMITS, partialFlushMs: 40, ...limits });
  const mark = (step: RunStep, token = output.token) => Buffer.from(`\x1e${token}:${step}\x1e`);
  return { output, lines, dropped, mark, texts: () => lines.map((line) => line.text) };
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('RunOutput: a run\'s output as lines', () => {
  it('given lines split across chunks on both streams, when appended, then each stream\'s lines come whole, in order, with their stream', () => {
    const { output, lines } = capture();
    output.append('stdout', Buffer.from('one\ntw'));
    output.append('stderr', Buffer.from('oops\n'));
    output.append('stdout', Buffer.from('o\nthree\n'));
    output.end();
    expect(lines.map((line) => [line.stream, line.text])).to.deep.equal([
      ['stdout', 'one'],
      ['stderr', 'oops'],
      ['stdout', 'two'],
      ['stdout', 'three'],
    ]);
  });

  it('given a line without a newline, when the flush delay passes, then it is handed on as partial, and what follows is a line of its own', async () => {
    const { output, lines } = capture({ partialFlushMs: 30 });
    output.append('stdout', Buffer.from('progress 10%'));
    expect(lines).to.deep.equal([]);
    await wait(80);
    expect(lines).to.deep.equal([{ stream: 'stdout', step: 'load', text: 'progress 10%', partial: true }]);
    output.append('stdout', Buffer.from(' done\n'));
    output.end();
    expect(lines.map((line) => line.text)).to.deep.equal(['progress 10%', ' done']);
  });

  it('given a progress bar redrawn with carriage returns, when flushed, then the line is what a terminal shows (its last state)', () => {
    expect(shownText('10%\r20%\r30%')).to.equal('30%');
    expect(shownText('windows line\r')).to.equal('windows line');
    expect(shownText('a\rb\r')).to.equal('b');
    expect(shownText('plain')).to.equal('plain');
  });

  it('given marks naming steps between writes, when appended, then each line carries the step its mark named, and the marks are taken out', () => {
    const { output, lines, mark } = capture();
    const chunk = Buffer.concat([mark('load'), Buffer.from('imported\n'), mark('initialize'), Buffer.from('init\n'), mark('run'), Buffer.from('running\n')]);
    const kept = output.append('stdout', chunk);
    output.append('stderr', Buffer.concat([mark('run'), Buffer.from('warn\n')]));
    output.end();
    expect(kept.toString()).to.equal('imported\ninit\nrunning\n');
    expect(lines.map((line) => [line.step, line.stream, line.text])).to.deep.equal([
      ['load', 'stdout', 'imported'],
      ['initialize', 'stdout', 'init'],
      ['run', 'stdout', 'running'],
      ['run', 'stderr', 'warn'],
    ]);
  });

  it('given a mark split between two reads, when appended, then it is still read as a mark', () => {
    const { output, lines, mark } = capture();
    const whole = Buffer.concat([Buffer.from('a\n'), mark('finish'), Buffer.from('b\n')]);
    for (let cut = 3; cut < whole.length - 2; cut += 1) {
      const before = lines.length;
      const first = output.append('stdout', whole.subarray(0, cut));
      const second = output.append('stdout', whole.subarray(cut));
      expect(Buffer.concat([first, second]).toString(), `cut at ${cut}`).to.equal('a\nb\n');
      expect(lines.slice(before).map((line) => [line.step, line.text]), `cut at ${cut}`).to.deep.equal([
        [lines[before]?.step, 'a'],
        ['finish', 'b'],
      ]);
    }
  });

  it('given a mark with another token or an unknown step, and a lone record separator, when appended, then they stay text', () => {
    const { output, texts, lines, mark } = capture();
    output.append('stdout', Buffer.concat([mark('run', '0123456789abcdef'), Buffer.from('forged\n')]));
    output.append('stdout', Buffer.from(`\x1e${output.token}:shell\x1eodd\n`));
    output.append('stdout', Buffer.from('sep \x1e here\n'));
    output.append('stdout', Buffer.from('ends with \x1e'));
    output.end();
    expect(texts()).to.deep.equal(['\x1e0123456789abcdef:run\x1eforged', `\x1e${output.token}:shell\x1eodd`, 'sep \x1e here', 'ends with \x1e']);
    expect(lines.every((line) => line.step === 'load')).to.equal(true);
  });

  it('given no mark, when the protocol moves the run on, then lines are under the protocol\'s step and an unfinished one is handed on at the change', () => {
    const { output, lines } = capture();
    output.append('stdout', Buffer.from('from load\nhalf'));
    output.stepTo('run');
    output.append('stdout', Buffer.from('from run\n'));
    output.end();
    expect(lines.map((line) => [line.step, line.text, line.partial ?? false])).to.deep.equal([
      ['load', 'from load', false],
      ['load', 'half', true],
      ['run', 'from run', false],
    ]);
  });

  it('given more lines than the cap, when the run ends, then the first ones are handed on and one report says how many lines and bytes were dropped', () => {
    const { output, lines, dropped } = capture({ maxLines: 3 });
    output.append('stdout', Buffer.from('1\n2\n'));
    output.append('stderr', Buffer.from('3\n4\n5\n'));
    output.append('stdout', Buffer.from('6\nunfinished'));
    output.end();
    expect(lines.map((line) => line.text)).to.deep.equal(['1', '2', '3']);
    expect(dropped).to.deep.equal([{ lines: 4, bytes: 'unfinished'.length + 6, maxLines: 3, maxBytes: DEFAULT_RUN_OUTPUT_LIMITS.maxBytes }]);
  });

  it('given more bytes than the cap, when appended, then lines stop at the first that does not fit (later short ones included)', () => {
    const { output, texts, dropped } = capture({ maxBytes: 10 });
    output.append('stdout', Buffer.from('12345\n1234\n123\n1\n'));
    output.end();
    expect(texts()).to.deep.equal(['12345', '1234']);
    expect(dropped[0]).to.include({ lines: 2, bytes: 6 });
  });

  it('given output within the caps, when the run ends, then no drop report comes', () => {
    const { output, dropped } = capture({ maxLines: 2 });
    output.append('stdout', Buffer.from('a\nb\n'));
    output.end();
    expect(dropped).to.deep.equal([]);
  });

  it('given a line longer than the per-line cap, when appended in pieces, then it is cut at a character boundary and the cut bytes are counted', () => {
    const { output, lines } = capture({ maxLineBytes: 10 });
    output.append('stdout', Buffer.from('abcdefgh'));
    output.append('stdout', Buffer.from('é€xyz\nshort\n'));
    output.end();
    // 'abcdefgh' (8) + 'é' (2) = 10 bytes kept; '€xyz' (6) cut.
    expect(lines).to.deep.equal([
      { stream: 'stdout', step: 'load', text: 'abcdefghé', cutBytes: 6 },
      { stream: 'stdout', step: 'load', text: 'short' },
    ]);
    const split = capture({ maxLineBytes: 9 });
    split.output.append('stdout', Buffer.from('abcdefgh€\n'));
    split.output.end();
    expect(split.lines[0]).to.deep.equal({ stream: 'stdout', step: 'load', text: 'abcdefgh', cutBytes: 3 });
  });

  it('given a character split between two writes at the flush delay, when flushed, then its bytes wait for the rest instead of becoming a replacement character', async () => {
    const { output, texts } = capture({ partialFlushMs: 20 });
    const euro = Buffer.from('€');
    output.append('stdout', Buffer.concat([Buffer.from('price '), euro.subarray(0, 2)]));
    await wait(60);
    output.append('stdout', Buffer.concat([euro.subarray(2), Buffer.from('5\n')]));
    output.end();
    expect(texts()).to.deep.equal(['price ', '€5']);
    expect(completeUtf8(Buffer.from('ab'))).to.equal(2);
    expect(completeUtf8(euro.subarray(0, 2))).to.equal(0);
  });

  it('given a runner note over the cap, when noted, then it is handed on all the same, under the current step', () => {
    const { output, lines } = capture({ maxLines: 0 });
    output.append('stdout', Buffer.from('x\n'));
    output.stepTo('finish');
    output.note('finish is called in a fresh process');
    output.end();
    expect(lines).to.deep.equal([{ stream: 'runner', step: 'finish', text: 'finish is called in a fresh process' }]);
  });

  it('given an ended run, when more output comes, then nothing more is handed on', () => {
    const { output, lines, dropped } = capture();
    output.end();
    output.append('stdout', Buffer.from('late\n'));
    output.note('late note');
    output.end();
    expect(lines).to.deep.equal([]);
    expect(dropped).to.deep.equal([]);
  });
});
