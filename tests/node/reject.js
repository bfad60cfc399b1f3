// an unhandled promise rejection: exit status 1
Promise.reject(new RangeError("unhandled"));
