/** Waits until `condition` holds (polling), or fails after `timeoutMs`: for tests of async effects. */
export const eventuallyTrue = async (
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 2_000,
): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
};
