// an uncaught exception: stderr and exit status 1
console.log("before");
setTimeout(() => { throw new TypeError("uncaught here"); }, 1);
