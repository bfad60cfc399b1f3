// files, Error stacks (V8 walks its frames), WebAssembly
const fs = require('fs'), os = require('os'), path = require('path');
const d = fs.mkdtempSync(path.join(os.tmpdir(), 'v8b-'));
fs.writeFileSync(path.join(d, 'a.txt'), 'line\n'.repeat(1000));
console.log(fs.readFileSync(path.join(d, 'a.txt'), 'utf8').split('\n').length);
fs.rmSync(d, {recursive: true});
const e = new Error('stack'); console.log(e.stack.split('\n').length > 1, typeof WebAssembly);
const wasm = new WebAssembly.Module(new Uint8Array([0,97,115,109,1,0,0,0,1,7,1,96,2,127,127,1,127,3,2,1,0,7,7,1,3,97,100,100,0,0,10,9,1,7,0,32,0,32,1,106,11]));
console.log(new WebAssembly.Instance(wasm).exports.add(40, 2));
