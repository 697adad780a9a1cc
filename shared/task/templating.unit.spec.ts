import { expect } from 'chai';
import fc from 'fast-check';
import { builtinVariables, hasPlaceholder, renderString, renderTemplates, templateVariables } from './templating.ts';

const NOW = new Date('2026-03-04T05:06:07.089Z');

describe('task templating: builtin variables (spec 4.2 rule 9)', () => {
  it('given a logical date, when builtins are computed, then each has its spec format', () => {
    expect(builtinVariables('2026-01-02T00:00:00.000Z', NOW)).to.deep.equal({
      ds: '2026-01-02',
      ds_nodash: '20260102',
      ts: '2026-01-02T00:00:00+00:00',
      ts_nodash_with_tz: '20260102T000000+0000',
      ts_nodash: '20260102T000000',
      current_date: '2026-03-04',
      current_timestamp: '2026-03-04T05:06:07.089000+00:00',
    });
  });

  it('given a logical date with time and milliseconds, when builtins are computed, then ts carries microseconds and the nodash forms seconds', () => {
    const builtins = builtinVariables(new Date('2024-02-29T23:59:58.5Z'), NOW);
    expect(builtins.ts).to.equal('2024-02-29T23:59:58.500000+00:00');
    expect(builtins.ts_nodash).to.equal('20240229T235958');
    expect(builtins.ts_nodash_with_tz).to.equal('20240229T235958+0000');
  });

  it('given a null logical date, when builtins are computed, then they come from now', () => {
    const builtins = builtinVariables(null, NOW);
    expect(builtins.ds).to.equal('2026-03-04');
    expect(builtins.ts).to.equal('2026-03-04T05:06:07.089000+00:00');
  });

  it('given a logical date far from now, when current_* are computed, then they always use now', () => {
    const builtins = builtinVariables('2020-01-01T00:00:00Z', NOW);
    expect(builtins.current_date).to.equal('2026-03-04');
    expect(builtins.current_timestamp).to.equal('2026-03-04T05:06:07.089000+00:00');
  });
});

describe('task templating: rendering', () => {
  const variables = { ds: '2026-01-02', table: 'sales', n: 3, flag: false, nothing: null, obj: { a: [1] } };

  it('given placeholders with and without spaces, when rendered, then all resolve', () => {
    expect(renderString('{{ds}}|{{ ds }}|{{  ds\t}}', variables)).to.equal('2026-01-02|2026-01-02|2026-01-02');
  });

  it('given undefined variables, when rendered, then the placeholders stay unchanged, spaces included', () => {
    expect(renderString('select * from {{ table }} where d = {{ missing }} and {{other}}', variables)).to.equal(
      'select * from sales where d = {{ missing }} and {{other}}',
    );
    expect(renderString('{{ undefinedValue }}', { undefinedValue: undefined })).to.equal('{{ undefinedValue }}');
  });

  it('given non-string values, when rendered, then their JSON text is inserted, even for a whole-string placeholder', () => {
    expect(renderTemplates({ n: '{{ n }}', f: '{{flag}}', z: '{{nothing}}', o: '{{ obj }}' }, variables)).to.deep.equal({
      n: '3',
      f: 'false',
      z: 'null',
      o: '{"a":[1]}',
    });
  });

  it('given a nested payload, when rendered, then strings at any depth are rendered and keys and other leaves are kept', () => {
    const payload = { '{{ table }}': ['{{ds}}', 1, true, null, { deep: 'x_{{ table }}_y' }], count: 2 };
    expect(renderTemplates(payload, variables)).to.deep.equal({
      '{{ table }}': ['2026-01-02', 1, true, null, { deep: 'x_sales_y' }],
      count: 2,
    });
  });

  it('given a scalar payload, when rendered, then strings render and other scalars pass through', () => {
    expect(renderTemplates('{{ ds }}', variables)).to.equal('2026-01-02');
    expect(renderTemplates(42, variables)).to.equal(42);
    expect(renderTemplates(null, variables)).to.equal(null);
  });

  it('given a variable whose value is itself a placeholder, when rendered, then it is not rendered again', () => {
    expect(renderString('{{ a }}', { a: '{{ b }}', b: 'x' })).to.equal('{{ b }}');
  });

  it('given a payload, when rendered, then the input is not mutated', () => {
    const payload = { list: ['{{ ds }}'], nested: { v: '{{ table }}' } };
    const snapshot = JSON.stringify(payload);
    renderTemplates(payload, variables);
    expect(JSON.stringify(payload)).to.equal(snapshot);
  });
});

describe('task templating: variable sources', () => {
  const task = {
    name: 'load_sales',
    project_laui: 'p1',
    logical_date: '2026-01-02T00:00:00.000Z',
    retry_number: 1,
    description: 'secret description',
    actions: { pre_actions: [] },
    payload: { q: 1 },
    config: { parameters: { hidden: true } },
    region: 'task-region',
  };

  it('given task fields, when variables are built, then all but description, actions, payload and config are available', () => {
    const vars = templateVariables(task, {}, NOW);
    expect(renderString('{{name}} {{ project_laui }} {{retry_number}} {{region}}', vars)).to.equal('load_sales p1 1 task-region');
    expect(renderString('{{description}} {{actions}} {{payload}} {{config}}', vars)).to.equal('{{description}} {{actions}} {{payload}} {{config}}');
  });

  it('given a parameter and a task field with the same name, when rendered, then the parameter wins', () => {
    expect(renderString('{{ region }}', templateVariables(task, { region: 'param-region' }, NOW))).to.equal('param-region');
  });

  it('given a parameter named like a builtin, when rendered, then the builtin wins', () => {
    const vars = templateVariables(task, { ds: 'param-ds', ts: 'param-ts' }, NOW);
    expect(renderString('{{ ds }} {{ ts }}', vars)).to.equal('2026-01-02 2026-01-02T00:00:00+00:00');
  });

  it('given a task without logical_date, when rendered, then builtins use now', () => {
    const vars = templateVariables({ name: 'adhoc', logical_date: null }, null, NOW);
    expect(renderString('{{ ds_nodash }}', vars)).to.equal('20260304');
  });

  it('given action variables, when rendered, then their string values resolve like the payload', () => {
    const vars = templateVariables(task, { target: 'dwh' }, NOW);
    expect(renderTemplates({ to: '{{ target }}', day: '{{ds_nodash}}', retries: 3, unknown: '{{ nope }}' }, vars)).to.deep.equal({
      to: 'dwh',
      day: '20260102',
      retries: 3,
      unknown: '{{ nope }}',
    });
  });
});

describe('task templating: values without a placeholder (issue 34: no variables gathered for them)', () => {
  it('given any JSON value, when it holds no placeholder, then it renders as itself whatever the variables are', () => {
    // Strings from an alphabet that makes placeholders (and near misses) often.
    const text = fc.array(fc.constantFrom('{', '}', ' ', 'a', 'b', 'ds', '_', '.', 'x', '{{a}}', '{{ ds }}', '{{zz}}', '{{ a.b }}'), { maxLength: 8 }).map((parts) => parts.join(''));
    const value = fc.letrec((tie) => ({
      any: fc.oneof({ depthSize: 'small' }, text, fc.integer(), fc.boolean(), fc.constant(null), fc.array(tie('any'), { maxLength: 4 }), fc.dictionary(text, tie('any'), { maxKeys: 4 })),
    })).any;
    const variables = { a: 'A', b: 2, ds: '2026-01-01', x: { y: 1 }, 'a.b': 'dotted' };
    fc.assert(
      fc.property(value, (given) => {
        const rendered = renderTemplates(given, variables);
        if (!hasPlaceholder(given)) expect(rendered).to.deep.equal(given);
        if (JSON.stringify(rendered) !== JSON.stringify(given)) expect(hasPlaceholder(given)).to.equal(true);
      }),
      { numRuns: 500 },
    );
  });

  it('given a placeholder deep in arrays and objects, or only near misses, when asked, then it is found, or not', () => {
    expect(hasPlaceholder({ a: [1, { b: ['x', 'run {{ ds }}'] }] })).to.equal(true);
    expect(hasPlaceholder({ '{{ds}}': 'a key is not rendered', b: ['{ds}', '{{}}', '{{ d s }}', null, 3] })).to.equal(false);
    expect(hasPlaceholder(null)).to.equal(false);
    expect(hasPlaceholder('{{ds}}')).to.equal(true);
  });
});
