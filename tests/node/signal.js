// a signal handler in JS, then death by SIGTERM
process.on('SIGUSR2', () => { console.log('got SIGUSR2'); process.kill(process.pid, 'SIGTERM'); });
setTimeout(() => process.kill(process.pid, 'SIGUSR2'), 1);
setTimeout(() => {}, 10000);
