// promises, async functions and generators, microtasks, timers, immediates
const sleep = ms => new Promise(r => setTimeout(r, ms));
async function fib(n) { return n < 2 ? n : (await fib(n - 1)) + (await fib(n - 2)); }
(async () => {
  const r = await Promise.all([fib(15), sleep(5).then(() => "slept"), Promise.resolve(3)]);
  console.log(r);
  try { await Promise.reject(new Error("boom")); } catch (e) { console.log("caught", e.message); }
  const results = await Promise.allSettled([Promise.reject(1), 2]);
  console.log(JSON.stringify(results));
  queueMicrotask(() => console.log("microtask"));
  setImmediate(() => console.log("immediate"));
  for await (const x of (async function* () { yield 1; yield 2; })()) console.log("gen", x);
})();
