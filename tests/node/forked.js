// the child of child.js's fork: an IPC message and process.exitCode
process.send({pid: typeof process.pid, sum: [1, 2, 3].reduce((a, b) => a + b)});
process.exitCode = 5;
