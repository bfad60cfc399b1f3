// private fields, BigInt, Buffer, crypto (OpenSSL), zlib, process.exit(3) from a callback
process.on('exit', c => console.log('exiting', c));
class A { #x = 1; get x() { return this.#x; } }
console.log(new A().x, [3,1,2].toSorted ? 'toSorted' : 'no', new Map([[1,2]]).size, BigInt(2) ** 70n);
const buf = Buffer.from('hello'); console.log(buf.toString('base64'), require('crypto').createHash('sha256').update('x').digest('hex'));
require('zlib').gzip('abc'.repeat(100), (e, z) => { console.log('gz', require('zlib').gunzipSync(z).length); process.exit(3); });
