import { expect } from 'chai';
import { definesFunction } from './definedFunctions.ts';

describe('ai/generate: required functions read from the code (definesFunction)', () => {
  it('given Python, when looked for, then top-level def, async def and assignments count, nested ones and mentions do not', () => {
    const code = 'async def run(c, p, x):\n    def finish():\n        pass\ninitialize = lambda c, p, x: None\n# check_completion later\n';
    expect(['run', 'initialize', 'finish', 'check_completion'].map((name) => definesFunction('python', code, name))).to.deep.equal([true, true, false, false]);
  });

  it('given JavaScript in its module forms, when looked for, then each form is found', () => {
    const forms = [
      'export async function run() {}',
      'function run() {}\nmodule.exports = { run };',
      'const run = async () => 1; export { run };',
      'exports.run = () => 1;',
      'module.exports = {\n  async run(connection) { return 1; },\n};',
      'module.exports = { run: () => 1 };',
      'export default { run() {} };',
    ];
    for (const code of forms) expect(definesFunction('javascript', code, 'run'), code).to.equal(true);
    expect(definesFunction('javascript', 'export function running() {}\n// run later', 'run')).to.equal(false);
  });
});
