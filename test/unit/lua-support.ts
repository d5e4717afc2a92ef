/**
 * Shared by the Lua script tests (lua, lua-keys, lua-argv): made-up scripts for the assembler.
 */

/** A made-up script: its header lines, then its body. */
export const made = (keys: string, argv: string, body: string) =>
  `-- test script\n--! keys: ${keys}\n--! argv: ${argv}\n${body}\n`;
