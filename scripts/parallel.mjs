// Runs shell commands at once and fails when any of them fails; each one's output is printed whole
// when it ends, so two compilers' errors never interleave. `npm test` runs the type-check, the build
// and tap's own build this way: on two cores they take the time of the longest instead of the sum.
//   node scripts/parallel.mjs 'COMMAND' 'COMMAND' ...
import { spawn } from 'node:child_process';

const commands = process.argv.slice(2);
const results = await Promise.all(
  commands.map(
    (command) =>
      new Promise((resolve) => {
        const child = spawn(command, { shell: true, stdio: ['ignore', 'pipe', 'pipe'] });
        const output = [];
        child.stdout.on('data', (chunk) => output.push(chunk));
        child.stderr.on('data', (chunk) => output.push(chunk));
        child.on('error', (error) => {
          process.stdout.write(`${error.message}\n`);
          resolve({ command, code: 1 });
        });
        child.on('close', (code, signal) => {
          process.stdout.write(Buffer.concat(output));
          resolve({ command, code: code ?? (signal ? 1 : 0) });
        });
      }),
  ),
);
const failed = results.filter((result) => result.code !== 0);
for (const { command, code } of failed) console.error(`# failed (exit ${code}): ${command}`);
process.exit(failed.length > 0 ? 1 : 0);
