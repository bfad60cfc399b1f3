// JSON round trips, hot enough for the JIT to compile them
const o = {a: [1, 2, {b: "x\u00e9"}], n: null, f: 1.5e-7, big: 2 ** 60};
const s = JSON.stringify(o, null, 1);
console.log(s, JSON.parse(s).a[2].b, JSON.stringify(JSON.parse(s)) === JSON.stringify(o));
let acc = 0;
for (let i = 0; i < 200000; i++) acc += JSON.parse(JSON.stringify({i})).i % 7;
console.log("acc", acc);
