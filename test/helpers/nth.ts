/**
 * `list[index]`, failing the test with the index and the list's length when there is no such
 * element (the strict-indexing counterpart of reading a list the test itself filled).
 */
export function nth<T>(list: readonly T[], index: number): T {
  const value = list[index];
  if (value === undefined) throw new Error(`expected an element at index ${index}, the list has ${list.length}`);
  return value;
}
