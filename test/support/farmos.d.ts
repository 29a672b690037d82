// farmos@2.0.0-beta.16 ships no type declarations; test/api/farmosjs.test.ts drives it untyped.
declare module 'farmos';
