// Reference server for volley: Jetty 12's core API (a plain Handler, no servlet), HTTP/1.1 on
// 127.0.0.1:$PORT with Jetty's production defaults. Every handler path is non-blocking: the
// POST body is counted chunk by chunk through read()/demand(), /delay answers from the server's
// Scheduler, and responses are written asynchronously.
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpMethod;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.Fields;

public final class Main {
    private static final byte[] DOT = {'.'};
    private static final byte[] HELLO = "Hello, World!".getBytes(StandardCharsets.US_ASCII);
    // Caps /bytes?n= (1 GiB): a larger body is refused rather than allocated.
    private static final long MAX_BYTES = 1L << 30;

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(System.getenv().getOrDefault("PORT", "8080"));

        // Jetty's defaults: a QueuedThreadPool of at most 200 threads, acceptors and selectors
        // sized by the number of cores, 30 s idle timeout, HTTP/1.1 with keep-alive.
        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        connector.setPort(port);
        // Listen backlog 1024 like the other JVM servers: Jetty's 0 means the JDK's 50, which
        // refuses part of a burst of new connections.
        connector.setAcceptQueueSize(1024);
        server.addConnector(connector);
        server.setHandler(new ContractHandler());
        server.start();
        server.join();
    }

    /** The contract's endpoints. NonBlocking: handle() never blocks, so Jetty may run it on
     * the selector thread that read the request instead of dispatching it to the pool. */
    static final class ContractHandler extends Handler.Abstract.NonBlocking {
        @Override
        public boolean handle(Request request, Response response, Callback callback) {
            String path = Request.getPathInContext(request);
            String method = request.getMethod();
            if (path.equals("/") && HttpMethod.POST.is(method)) {
                new BodyCounter(request, response, callback).run();
                return true;
            }
            if (!HttpMethod.GET.is(method) && !HttpMethod.HEAD.is(method)) {
                send(response, callback, 405, "method not allowed".getBytes(StandardCharsets.US_ASCII));
                return true;
            }
            switch (path) {
                case "/" -> send(response, callback, 200, DOT);
                case "/hello" -> send(response, callback, 200, HELLO);
                case "/delay" -> {
                    long ms = param(request, "ms");
                    if (ms < 0) {
                        send(response, callback, 400,
                                "ms must be a non-negative integer".getBytes(StandardCharsets.US_ASCII));
                    } else {
                        // The server's own timer: the waiting request holds no thread.
                        request.getComponents().getScheduler().schedule(
                                () -> send(response, callback, 200, DOT), ms, TimeUnit.MILLISECONDS);
                    }
                }
                case "/bytes" -> {
                    long n = param(request, "n");
                    if (n < 0 || n > MAX_BYTES) {
                        send(response, callback, 400,
                                "n must be an integer from 0 to 2^30".getBytes(StandardCharsets.US_ASCII));
                    } else {
                        byte[] body = new byte[(int) n];
                        Arrays.fill(body, (byte) 'x');
                        send(response, callback, 200, body);
                    }
                }
                default -> send(response, callback, 404, "not found".getBytes(StandardCharsets.US_ASCII));
            }
            return true;
        }
    }

    /** Counts the request body without blocking: reads the chunks that are there, asks for a
     * callback (demand) when none is, and answers `length:N` after the last one. */
    static final class BodyCounter implements Runnable {
        private final Request request;
        private final Response response;
        private final Callback callback;
        private long length;

        BodyCounter(Request request, Response response, Callback callback) {
            this.request = request;
            this.response = response;
            this.callback = callback;
        }

        @Override
        public void run() {
            while (true) {
                Content.Chunk chunk = request.read();
                if (chunk == null) {
                    request.demand(this);
                    return;
                }
                if (Content.Chunk.isFailure(chunk)) {
                    callback.failed(chunk.getFailure());
                    return;
                }
                length += chunk.remaining();
                chunk.release();
                if (chunk.isLast()) {
                    send(response, callback, 200, ("length:" + length).getBytes(StandardCharsets.US_ASCII));
                    return;
                }
            }
        }
    }

    /** The whole body in one last write, with Content-Length (never chunked). */
    static void send(Response response, Callback callback, int status, byte[] body) {
        response.setStatus(status);
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, "text/plain");
        response.getHeaders().put(HttpHeader.CONTENT_LENGTH, body.length);
        response.write(true, ByteBuffer.wrap(body), callback);
    }

    /** The query parameter `name` as a non-negative number, or -1 when absent or malformed. */
    static long param(Request request, String name) {
        Fields query = Request.extractQueryParameters(request);
        String value = query.getValue(name);
        if (value == null) {
            return -1;
        }
        try {
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
