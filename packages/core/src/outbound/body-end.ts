/**
 * The response with a body that calls `end` once, when it has been read to its end, cancelled, or failed (the
 * connection lost, the request aborted); at once for a response without a body. Reads nothing ahead of the
 * caller. The response's url, redirected and type are kept, which a new Response would otherwise lose.
 */
export function onBodyEnd(response: Response, end: () => void): Response {
  const { body } = response
  if (body === null || NULL_BODY_STATUSES.has(response.status)) {
    end()
    return response
  }
  let ended = false
  const finish = () => {
    if (ended) return
    ended = true
    end()
  }
  const reader = body.getReader()
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let chunk: Awaited<ReturnType<typeof reader.read>>
        try {
          chunk = await reader.read()
        } catch (error) {
          controller.error(error)
          finish()
          return
        }
        if (chunk.done) {
          controller.close()
          finish()
        } else controller.enqueue(chunk.value)
      },
      // The caller is done with the body now. Its cancel is not held up until the upstream's body is cancelled:
      // when that body is one branch of a clone, that waits for the other branch to be read or cancelled too.
      cancel(reason) {
        finish()
        void reader.cancel(reason).catch(() => {})
      },
    },
    { highWaterMark: 0 },
  )
  const wrapped = new Response(stream, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  })
  // Own properties over the prototype's getters: what the caller reads of the response stays the upstream's.
  Object.defineProperties(wrapped, {
    url: { value: response.url },
    redirected: { value: response.redirected },
    type: { value: response.type },
  })
  return wrapped
}

/** Statuses a Response may not have a body with (the Fetch standard's null body statuses). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304])
