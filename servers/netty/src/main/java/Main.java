// Reference server for volley: Netty 4.1 directly, HttpServerCodec + HttpObjectAggregator + one
// handler, HTTP/1.1 on 127.0.0.1:$PORT with Netty's defaults. The native epoll transport when
// it loads (Linux), NIO otherwise. Every path is non-blocking: handlers run on the channel's
// event loop, and /delay answers from a task scheduled on that event loop.
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;

public final class Main {
    private static final byte[] DOT = {'.'};
    private static final byte[] HELLO = "Hello, World!".getBytes(StandardCharsets.US_ASCII);
    // Caps /bytes?n= (1 GiB): a larger body is refused rather than allocated.
    private static final long MAX_BYTES = 1L << 30;
    // HttpObjectAggregator's limit: a larger request body gets 413 and the connection closes.
    private static final int MAX_BODY = 64 << 20;
    private static final byte[] XS = new byte[64 * 1024];

    static {
        Arrays.fill(XS, (byte) 'x');
    }

    public static void main(String[] args) throws InterruptedException {
        int port = Integer.parseInt(System.getenv().getOrDefault("PORT", "8080"));

        // Netty's defaults: one acceptor thread, 2 event loops per core for the connections,
        // the pooled direct allocator, TCP_NODELAY on, SO_BACKLOG from net.core.somaxconn.
        boolean epoll = Epoll.isAvailable();
        EventLoopGroup boss = epoll ? new EpollEventLoopGroup(1) : new NioEventLoopGroup(1);
        EventLoopGroup workers = epoll ? new EpollEventLoopGroup() : new NioEventLoopGroup();
        Class<? extends ServerChannel> channel =
                epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
        if (!epoll) {
            System.err.println("netty: epoll unavailable (" + Epoll.unavailabilityCause()
                    + "), using NIO");
        }
        try {
            Channel server = new ServerBootstrap()
                    .group(boss, workers)
                    .channel(channel)
                    .option(ChannelOption.SO_REUSEADDR, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(
                                    new HttpServerCodec(),
                                    new HttpObjectAggregator(MAX_BODY),
                                    new ContractHandler());
                        }
                    })
                    .bind("127.0.0.1", port)
                    .sync()
                    .channel();
            server.closeFuture().sync();
        } finally {
            boss.shutdownGracefully();
            workers.shutdownGracefully();
        }
    }

    /**
     * The contract's endpoints, on whole requests (the aggregator has read the body); one per
     * connection. Responses leave in the order of the requests even when a client pipelines:
     * those that are ready while an earlier /delay still waits are queued behind it.
     */
    static final class ContractHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
        /** A response in order, null until it is made. */
        private static final class Slot {
            FullHttpResponse response;
            boolean keepAlive;
        }

        private final ArrayDeque<Slot> waiting = new ArrayDeque<>();

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            boolean keepAlive = HttpUtil.isKeepAlive(req);
            HttpVersion version = req.protocolVersion();
            QueryStringDecoder uri = new QueryStringDecoder(req.uri());
            String path = uri.path();
            HttpMethod method = req.method();

            if (path.equals("/") && method.equals(HttpMethod.POST)) {
                byte[] body = ("length:" + req.content().readableBytes())
                        .getBytes(StandardCharsets.US_ASCII);
                respond(ctx, version, keepAlive, HttpResponseStatus.OK, Unpooled.wrappedBuffer(body));
                return;
            }
            if (!method.equals(HttpMethod.GET) && !method.equals(HttpMethod.HEAD)) {
                respond(ctx, version, keepAlive, HttpResponseStatus.METHOD_NOT_ALLOWED,
                        text("method not allowed"));
                return;
            }
            switch (path) {
                case "/" -> respond(ctx, version, keepAlive, HttpResponseStatus.OK,
                        Unpooled.wrappedBuffer(DOT));
                case "/hello" -> respond(ctx, version, keepAlive, HttpResponseStatus.OK,
                        Unpooled.wrappedBuffer(HELLO));
                case "/delay" -> {
                    long ms = param(uri, "ms");
                    if (ms < 0) {
                        respond(ctx, version, keepAlive, HttpResponseStatus.BAD_REQUEST,
                                text("ms must be a non-negative integer"));
                    } else {
                        // A timer task on the connection's own event loop: nothing waits.
                        Slot slot = new Slot();
                        waiting.add(slot);
                        ctx.executor().schedule(() -> {
                            if (!ctx.channel().isActive()) {
                                return;
                            }
                            slot.response = response(version, keepAlive, HttpResponseStatus.OK,
                                    Unpooled.wrappedBuffer(DOT));
                            slot.keepAlive = keepAlive;
                            drain(ctx);
                            ctx.flush();
                        }, ms, TimeUnit.MILLISECONDS);
                    }
                }
                case "/bytes" -> {
                    long n = param(uri, "n");
                    if (n < 0 || n > MAX_BYTES) {
                        respond(ctx, version, keepAlive, HttpResponseStatus.BAD_REQUEST,
                                text("n must be an integer from 0 to 2^30"));
                    } else {
                        ByteBuf body = ctx.alloc().buffer((int) n);
                        for (int left = (int) n; left > 0; left -= XS.length) {
                            body.writeBytes(XS, 0, Math.min(left, XS.length));
                        }
                        respond(ctx, version, keepAlive, HttpResponseStatus.OK, body);
                    }
                }
                default -> respond(ctx, version, keepAlive, HttpResponseStatus.NOT_FOUND,
                        text("not found"));
            }
        }

        /** Responses are flushed once per read batch (pipelined requests share a syscall). */
        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();
        }

        /** Writes the response now, or queues it behind a /delay that is still waiting. */
        private void respond(ChannelHandlerContext ctx, HttpVersion version, boolean keepAlive,
                HttpResponseStatus status, ByteBuf body) {
            FullHttpResponse res = response(version, keepAlive, status, body);
            if (waiting.isEmpty()) {
                write(ctx, res, keepAlive);
            } else {
                Slot slot = new Slot();
                slot.response = res;
                slot.keepAlive = keepAlive;
                waiting.add(slot);
            }
        }

        /** Writes the queued responses that are ready, in order. */
        private void drain(ChannelHandlerContext ctx) {
            while (!waiting.isEmpty() && waiting.peek().response != null) {
                Slot slot = waiting.poll();
                write(ctx, slot.response, slot.keepAlive);
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) throws Exception {
            for (Slot slot : waiting) {
                if (slot.response != null) {
                    slot.response.release();
                }
            }
            waiting.clear();
            super.channelInactive(ctx);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    /** A full response with Content-Length (never chunked) and the Connection header. */
    static FullHttpResponse response(HttpVersion version, boolean keepAlive,
            HttpResponseStatus status, ByteBuf body) {
        FullHttpResponse res = new DefaultFullHttpResponse(version, status, body);
        res.headers()
                .set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.TEXT_PLAIN)
                .setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes());
        if (!keepAlive) {
            res.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        } else if (!version.isKeepAliveDefault()) {
            res.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
        }
        return res;
    }

    /** Writes (not flushes) the response; closes the connection after it without keep-alive. */
    static void write(ChannelHandlerContext ctx, FullHttpResponse res, boolean keepAlive) {
        if (keepAlive) {
            ctx.write(res, ctx.voidPromise());
        } else {
            ctx.write(res).addListener(ChannelFutureListener.CLOSE);
        }
    }

    static ByteBuf text(String s) {
        return Unpooled.wrappedBuffer(s.getBytes(StandardCharsets.US_ASCII));
    }

    /** The query parameter `name` as a non-negative number, or -1 when absent or malformed. */
    static long param(QueryStringDecoder uri, String name) {
        List<String> values = uri.parameters().get(name);
        if (values == null || values.isEmpty()) {
            return -1;
        }
        try {
            return Long.parseLong(values.get(0));
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
