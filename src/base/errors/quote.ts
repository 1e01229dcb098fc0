/** How a message shows a name or an id: quoted, as JSON writes it. Internal to the error classes, not exported by the package. */
export const q = (s: string) => JSON.stringify(s);
