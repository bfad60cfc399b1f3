// Node processes started from an instrumented node: exec of node itself,
// a shell with its exit status, a fork with an IPC channel.
const cp = require('child_process');
console.log(cp.execFileSync(process.execPath, ['-e', 'console.log(6*7)']).toString().trim());
const r = cp.spawnSync('sh', ['-c', 'echo hi; exit 4']);
console.log(r.status, r.stdout.toString().trim());
const c = cp.fork(__dirname + '/forked.js');
let got;
c.on('message', m => { got = m; });
c.on('exit', code => console.log('from child', JSON.stringify(got), 'exit', code));
