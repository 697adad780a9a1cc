import { expect } from 'chai';
import { CommanderError, type Command } from 'commander';
import { cliProgram } from './cliProgram.ts';

/** Every command of the program with its path of names (the program itself: []), found by walking it. */
const commandPaths = (command: Command, path: string[] = []): string[][] => [path, ...command.commands.flatMap((sub) => commandPaths(sub, [...path, sub.name()]))];

/** What `orchestrator <path> --help` prints and how it ends, in this process: commander exits through a throw. */
const help = async (path: string[]): Promise<{ out: string; error: unknown }> => {
  const program = cliProgram();
  let out = '';
  const quiet = (command: Command): void => {
    command.exitOverride().configureOutput({ writeOut: (text) => (out += text), writeErr: (text) => (out += text) });
    command.commands.forEach(quiet);
  };
  quiet(program);
  const error = await program.parseAsync(['node', 'cli', ...path, '--help']).then(
    () => null,
    (thrown: unknown) => thrown,
  );
  return { out, error };
};

describe('CLI: --help of every command', () => {
  const paths = commandPaths(cliProgram());

  it('given the program, when its commands are walked, then the known ones are found (the walk reaches nested commands)', () => {
    expect(paths.map((path) => path.join(' '))).to.include.members(['', 'user', 'user create', 'user grant-auditor', 'events', 'events export', 'events tail', 'events verify', 'events checkpoints']);
  });

  for (const path of paths) {
    it(`given \`${['orchestrator', ...path].join(' ')} --help\`, when run, then it prints that command's usage and options and exits 0`, async () => {
      const { out, error } = await help(path);
      expect(error, String(error)).to.be.instanceOf(CommanderError);
      expect((error as CommanderError).code).to.equal('commander.helpDisplayed');
      expect((error as CommanderError).exitCode).to.equal(0);
      expect(out).to.include(`Usage: ${['orchestrator', ...path].join(' ')}`);
      expect(out).to.include('-h, --help');
    });
  }

  it('given events export --help, when run, then the defaults and choices are shown (the bigint default of --from as a number)', async () => {
    const { out } = await help(['events', 'export']);
    expect(out).to.match(/--from <position>[\s\S]*\(default: 0\)/);
    expect(out).to.include('choices: "jsonl", "parquet", "csv"');
  });
});
