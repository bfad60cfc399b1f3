// worker threads (threads created inside V8 and libuv) and their messages
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');
if (isMainThread) {
  const ws = [1, 2, 3].map(n => new Promise((res, rej) => {
    const w = new Worker(__filename, { workerData: n });
    w.on('message', res); w.on('error', rej);
  }));
  Promise.all(ws).then(v => console.log("workers", v));
} else {
  let s = 0; for (let i = 0; i < 1e6 * workerData; i++) s = (s + i * i) % 1000003;
  parentPort.postMessage([workerData, s]);
}
