/** @jsxRuntime automatic @jsxImportSource hono/jsx */

/**
 * Splits text after the punctuation that separates the parts of addresses, paths and names
 * (`.` `/` `@` `-` `_` `?` `&` `=` `:` `,`), so a long value can wrap between its parts instead of
 * mid-word. Joined again, the pieces are the text exactly.
 */
export function wrapPieces(text: string): string[] {
  return text.split(/(?<=[./@\-_?&=:,])(?=[^\s])/u);
}

/** Text with line-break opportunities (<wbr>) between its parts; copying it yields the text unchanged. */
export function Wrappable(props: { text: string }) {
  const pieces = wrapPieces(props.text);
  return (
    <>
      {pieces.map((piece, i) =>
        i === 0 ? (
          piece
        ) : (
          <>
            <wbr />
            {piece}
          </>
        ),
      )}
    </>
  );
}
