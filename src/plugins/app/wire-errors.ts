import { randomUUID } from 'node:crypto';
import { type IncomingMessage, maxHeaderSize, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { ConnectionError, FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { CompactorError, ERRORS, type ErrorCode } from '../../errors.js';
import { problemDocument, sendProblem } from './problem.js';

/**
 * Errors Fastify answers itself, before any route, hook or error handler runs, made problem+json
 * like every other error: the router's (`frameworkErrors`: a malformed percent-escape, an
 * over-long path parameter) and the HTTP parser's (`clientErrorHandler`: a malformed request, a bad
 * `content-length`, headers or a request line too large, a request that did not arrive in time).
 */

/** Fastify's `frameworkErrors` option: the router's own errors, as problems. Never echoes the URL. */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  let code: ErrorCode = 'CMP_ERR_INTERNAL';
  let detail = 'an internal error occurred; the request id identifies it in the logs';
  if (error.code === 'FST_ERR_BAD_URL') {
    code = 'CMP_ERR_REQUEST_INVALID_URL';
    detail = 'the URL path is malformed (a percent-escape is not valid UTF-8 or not two hex digits)';
  } else if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    code = 'CMP_ERR_REQUEST_URI_TOO_LONG';
    detail = 'a path parameter is longer than 100 characters; no endpoint takes one that long';
  }
  if (code === 'CMP_ERR_INTERNAL') request.log.error({ err: error, code }, 'request failed');
  else request.log.info({ code, status: ERRORS[code].status }, 'request rejected');
  return sendProblem(request, reply, code, detail);
}

/** What the parser found wrong, by llhttp's error code, in the client's terms. */
const PARSER_DETAILS: Record<string, string> = {
  HPE_INVALID_CONTENT_LENGTH: 'the content-length header is not a valid length',
  HPE_UNEXPECTED_CONTENT_LENGTH: 'content-length and transfer-encoding are both given',
  HPE_INVALID_TRANSFER_ENCODING: 'the transfer-encoding header is not valid',
  HPE_INVALID_CHUNK_SIZE: 'a chunk of the chunked body has an invalid size',
  HPE_INVALID_METHOD: 'the request line does not start with a valid method',
  HPE_INVALID_VERSION: 'the request line does not end with HTTP/1.0 or HTTP/1.1',
  HPE_INVALID_HEADER_TOKEN: 'a header name or value holds characters HTTP does not allow',
  HPE_INVALID_CONSTANT: 'the request line is malformed',
  HPE_CR_EXPECTED: 'a line is not terminated by CRLF',
  HPE_LF_EXPECTED: 'a line is not terminated by CRLF',
  HPE_INVALID_EOF_STATE: 'the connection was closed before the request was complete',
};

/** A request line longer than this, when the headers overflow, makes the URL the culprit (414). */
const LONG_REQUEST_LINE = 8192;

function parserProblem(error: ConnectionError, requestTimeoutMs: number): { code: ErrorCode; detail: string } | undefined {
  const reason = error.code ?? '';
  if (reason === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return {
      code: 'CMP_ERR_REQUEST_TIMEOUT',
      detail: `the request did not arrive whole within ${requestTimeoutMs} ms (COMPACTOR_REQUEST_TIMEOUT_MS)`,
    };
  }
  if (reason === 'HPE_HEADER_OVERFLOW') {
    // Typed by Fastify as a serialized Buffer; Node hands the chunk being parsed, a Buffer.
    const raw: unknown = error.rawPacket;
    const packet = Buffer.isBuffer(raw) ? raw : undefined;
    const end = packet ? packet.indexOf('\r\n') : -1;
    const line = packet ? (end < 0 ? packet.length : end) : 0;
    if (packet && /^[A-Z]+ /.test(packet.subarray(0, 16).toString('latin1')) && line > LONG_REQUEST_LINE) {
      return {
        code: 'CMP_ERR_REQUEST_URI_TOO_LONG',
        detail: `the request line is longer than the server accepts (${maxHeaderSize} bytes with the headers)`,
      };
    }
    return {
      code: 'CMP_ERR_REQUEST_HEADERS_TOO_LARGE',
      detail: `the request line and headers are larger than ${maxHeaderSize} bytes together`,
    };
  }
  if (reason === 'HPE_INVALID_URL')
    return { code: 'CMP_ERR_REQUEST_INVALID_URL', detail: 'the request target is not a valid URL' };
  if (reason.startsWith('HPE_')) {
    return {
      code: 'CMP_ERR_REQUEST_MALFORMED',
      detail: `the request is not valid HTTP/1.1: ${PARSER_DETAILS[reason] ?? 'it could not be parsed'}`,
    };
  }
  return undefined;
}

/**
 * Builds Fastify's `clientErrorHandler`: the HTTP parser's errors and request timeouts answered
 * on the raw socket as problem+json (with a fresh request id, in the body and `x-request-id`, as
 * the request's own header could not be read), then the connection is closed. Socket errors
 * (a reset, a broken pipe) get no answer: nobody would read it. Logged by code, never content.
 */
export function clientErrorHandler(requestTimeoutMs: number) {
  return function onClientError(this: { log: FastifyBaseLogger }, error: ConnectionError, socket: Socket): void {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const problem = parserProblem(error, requestTimeoutMs);
    if (!problem) {
      socket.destroy();
      return;
    }
    const id = randomUUID();
    const status = ERRORS[problem.code].status;
    this.log.info({ code: problem.code, status, reason: error.code, request_id: id }, 'request rejected by the HTTP parser');
    // As Node does: never write into a response already under way on this connection.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (!socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const body = JSON.stringify(problemDocument(problem.code, problem.detail, id));
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${id}\r\nconnection: close\r\n\r\n${body}`,
      () => socket.destroy(),
    );
  };
}

/**
 * What Node would answer itself on a listening server, before Fastify sees the request, answered
 * like everything else: an `Expect` other than `100-continue` (Node's bare 417; RFC 9110 lets a
 * server ignore it, and the request is served as if it had none) and `CONNECT` (Node drops the
 * connection without a word; here a 405 problem: this is no proxy). An HTTP/1.1 request without
 * `Host` is refused by `missingHost` (Node's bare 400 is turned off: `requireHostHeader`).
 */
export function answerWireEdges(server: Server, log: FastifyBaseLogger): void {
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    server.emit('request', request, response);
  });
  server.on('connect', (_request: IncomingMessage, socket: Socket) => {
    const id = randomUUID();
    const code: ErrorCode = 'CMP_ERR_METHOD_NOT_ALLOWED';
    log.info({ code, status: 405, request_id: id }, 'request rejected');
    const body = JSON.stringify(problemDocument(code, 'CONNECT is not served: this is not a proxy', id));
    socket.on('error', () => socket.destroy());
    socket.end(
      `HTTP/1.1 405 ${STATUS_CODES[405]}\r\nallow: GET, HEAD, POST\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${id}\r\nconnection: close\r\n\r\n${body}`,
      () => socket.destroy(),
    );
  });
}

/** An `onRequest` hook: an HTTP/1.1 request without `Host` is malformed (RFC 9112); the connection closes. */
export async function missingHost(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (request.raw.httpVersion !== '1.1' || request.headers.host !== undefined) return;
  reply.header('connection', 'close');
  throw new CompactorError('CMP_ERR_REQUEST_MALFORMED', 'the request is not valid HTTP/1.1: it has no Host header');
}
