// regular expressions: global matches, replace callbacks, backtracking, sticky, Unicode
const text = Array.from({length: 5000}, (_, i) => `id${i}=${(i * 7919) % 1000}; name_${i.toString(36)}`).join("\n");
const m = [...text.matchAll(/id(\d+)=(\d+); name_([a-z0-9]+)/g)];
console.log(m.length, m[4321][3], text.replace(/\d+/g, d => d.length).length);
console.log(/^(a+)+$/.test("a".repeat(20) + "b"), "x-y_z".split(/[-_]/));
const sticky = /foo/y; sticky.lastIndex = 3; console.log(sticky.test("barfoo"), "ÄÖü".normalize("NFD").length);
