import { expect } from 'chai';
import { mergeTaskConfig, type ConfigMergeInput } from './mergeConfig.ts';

const merge = (input: Partial<ConfigMergeInput>) =>
  mergeTaskConfig({ workflowConfigs: [], attachedConfigs: [], inlineConfig: {}, ...input });

describe('task config merge (spec 4.2 rule 6)', () => {
  it('given no configs, when merged, then parameters are empty and the task keeps its retry fields', () => {
    const result = merge({ inlineConfig: undefined, taskTotalRetries: 2, taskRetryInterval: 5 });
    expect(result.config).to.deep.equal({ parameters: {}, not_overridable: [], overridable: [] });
    expect(result.total_retries).to.equal(2);
    expect(result.retry_interval).to.equal(5);
    expect(merge({}).total_retries).to.equal(0);
    expect(merge({}).retry_interval).to.equal(1);
  });

  it('given two workflow configs writing the same keys, when merged, then the first writer wins per key and per parameter', () => {
    const result = merge({
      workflowConfigs: [
        { total_retries: 1, parameters: { a: 'first' } },
        { total_retries: 9, retry_interval: 4, parameters: { a: 'second', b: 'second' } },
      ],
    });
    expect(result.config.parameters).to.deep.equal({ a: 'first', b: 'second' });
    expect(result.total_retries).to.equal(1);
    expect(result.retry_interval).to.equal(4);
  });

  it('given the three levels, when merged, then attached overrides workflow and inline overrides attached', () => {
    const result = merge({
      workflowConfigs: [{ total_retries: 1, retry_interval: 2, parameters: { a: 'wf', b: 'wf', c: 'wf' } }],
      attachedConfigs: [{ total_retries: 3, parameters: { b: 'att', c: 'att' } }],
      inlineConfig: { parameters: { c: 'inline' } },
    });
    expect(result.config.parameters).to.deep.equal({ a: 'wf', b: 'att', c: 'inline' });
    expect(result.total_retries).to.equal(3);
    expect(result.retry_interval).to.equal(2);
  });

  it('given several attached configs, when merged, then the first in array order wins within that level', () => {
    const result = merge({
      attachedConfigs: [{ parameters: { a: 'first' }, retry_interval: 7 }, { parameters: { a: 'second' }, retry_interval: 8 }],
    });
    expect(result.config.parameters.a).to.equal('first');
    expect(result.retry_interval).to.equal(7);
  });

  it('given a workflow not_overridable parameter, when higher levels set it, then the workflow value stays and the refusals are reported', () => {
    const result = merge({
      workflowConfigs: [{ parameters: { env: 'prod', region: 'eu' }, not_overridable: ['env'] }],
      attachedConfigs: [{ parameters: { env: 'dev', region: 'us' } }],
      inlineConfig: { parameters: { env: 'test' } },
    });
    expect(result.config.parameters).to.deep.equal({ env: 'prod', region: 'us' });
    expect(result.refused).to.deep.equal([
      { parameter: 'env', level: 'attached' },
      { parameter: 'env', level: 'inline' },
    ]);
    expect(result.config.not_overridable).to.deep.equal(['env']);
  });

  it('given an attached config that locks a parameter, when merged, then it still overrides the workflow and is protected from inline', () => {
    const result = merge({
      workflowConfigs: [{ parameters: { x: 1 } }],
      attachedConfigs: [{ parameters: { x: 2 }, not_overridable: ['x'] }],
      inlineConfig: { parameters: { x: 3 } },
    });
    expect(result.config.parameters.x).to.equal(2);
  });

  it('given a higher level listing a locked name as overridable, when merged, then the lock is not lifted', () => {
    const result = merge({
      workflowConfigs: [{ parameters: { x: 1 }, not_overridable: ['x'] }],
      inlineConfig: { parameters: { x: 3 }, overridable: ['x'] },
    });
    expect(result.config.parameters.x).to.equal(1);
  });

  it('given a non-empty overridable list, when higher levels write, then only the listed names of that level can be overridden', () => {
    const result = merge({
      workflowConfigs: [{ parameters: { a: 'wf', b: 'wf' }, overridable: ['a'] }],
      inlineConfig: { parameters: { a: 'inline', b: 'inline', c: 'inline' } },
    });
    expect(result.config.parameters).to.deep.equal({ a: 'inline', b: 'wf', c: 'inline' });
    expect(result.config.overridable).to.deep.equal(['a']);
    expect(result.config.not_overridable).to.deep.equal(['b']);
  });

  it('given an empty overridable list, when higher levels write, then nothing is locked', () => {
    const result = merge({
      workflowConfigs: [{ parameters: { a: 'wf' }, overridable: [] }],
      inlineConfig: { parameters: { a: 'inline' } },
    });
    expect(result.config.parameters.a).to.equal('inline');
  });

  it('given a name in both lists, when higher levels write it, then it is locked', () => {
    const result = merge({
      workflowConfigs: [{ parameters: { a: 'wf' }, overridable: ['a'], not_overridable: ['a'] }],
      inlineConfig: { parameters: { a: 'inline' } },
    });
    expect(result.config.parameters.a).to.equal('wf');
  });

  it('given a locked name no lower level set, when a higher level sets it, then it is accepted and then protected', () => {
    const result = merge({
      workflowConfigs: [{ not_overridable: ['x'] }],
      attachedConfigs: [{ parameters: { x: 'att' } }],
      inlineConfig: { parameters: { x: 'inline' } },
    });
    expect(result.config.parameters.x).to.equal('att');
  });

  it('given other top-level keys, when merged, then a higher level replaces the whole value (no deep merge)', () => {
    const result = merge({
      workflowConfigs: [{ notify: { email: 'a@x', slack: '#a' } }],
      inlineConfig: { notify: { email: 'b@x' } },
    });
    expect(result.config.notify).to.deep.equal({ email: 'b@x' });
  });

  it('given invalid retry values in the merged config, when merged, then the task values are kept with warnings', () => {
    const result = merge({ inlineConfig: { total_retries: -1, retry_interval: 1.5 }, taskTotalRetries: 2, taskRetryInterval: 3 });
    expect(result.total_retries).to.equal(2);
    expect(result.retry_interval).to.equal(3);
    expect(result.warnings).to.deep.equal([
      "total_retries must be a non-negative integer, got -1; the task's value is kept",
      "retry_interval must be a non-negative integer, got 1.5; the task's value is kept",
    ]);
  });

  it('given malformed entries, when merged, then they are ignored with warnings', () => {
    const result = merge({
      workflowConfigs: ['text', null, { parameters: ['x'], not_overridable: 'x' }, { parameters: { ok: true } }],
    });
    expect(result.config.parameters).to.deep.equal({ ok: true });
    expect(result.warnings).to.deep.equal([
      'workflow config 0: not an object; ignored',
      'workflow config 2: parameters is not an object; ignored',
      'workflow config 2: not_overridable is not a list of names; ignored',
    ]);
  });

  it('given input configs, when merged, then they are not mutated', () => {
    const workflow = { parameters: { a: 1 }, not_overridable: ['a'] };
    const inline = { parameters: { a: 2, b: 2 } };
    const snapshot = JSON.stringify([workflow, inline]);
    merge({ workflowConfigs: [workflow], inlineConfig: inline });
    expect(JSON.stringify([workflow, inline])).to.equal(snapshot);
  });
});
