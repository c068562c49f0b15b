// Public surface of @namzu/sandbox/testing (owned by the conformance work).
export {}
