// Reference gRPC server for volley: grpc-go serving helloworld.Greeter (helloworld.proto)
// with its production defaults; plain gRPC over cleartext HTTP/2 (h2c) on 127.0.0.1:$PORT,
// gRPC over TLS (ALPN h2) on the same port when TLS_CERT and TLS_KEY are set. The server
// reflection service is registered too. Nothing is logged per call; on SIGTERM or SIGINT it
// prints `calls N` (the calls answered since start) to stderr and exits.
package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	pb "volley/servers/grpc/helloworld"
)

// streamReplies is how many replies SayHelloStream sends.
const streamReplies = 3

// calls counts the calls answered, either method, a refused one too.
var calls atomic.Int64

type greeter struct {
	pb.UnimplementedGreeterServer
}

// refuse answers the name `fail` with INVALID_ARGUMENT, so a client can be shown a non-OK
// status on demand.
func refuse(name string) error {
	if name == "fail" {
		return status.Error(codes.InvalidArgument, "name fail refused")
	}
	return nil
}

func (greeter) SayHello(_ context.Context, req *pb.HelloRequest) (*pb.HelloReply, error) {
	defer calls.Add(1)
	if err := refuse(req.GetName()); err != nil {
		return nil, err
	}
	return &pb.HelloReply{Message: "Hello " + req.GetName()}, nil
}

func (greeter) SayHelloStream(req *pb.HelloRequest, stream grpc.ServerStreamingServer[pb.HelloReply]) error {
	defer calls.Add(1)
	if err := refuse(req.GetName()); err != nil {
		return err
	}
	for i := 0; i < streamReplies; i++ {
		if err := stream.Send(&pb.HelloReply{Message: "Hello " + req.GetName()}); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "50051"
	}
	var opts []grpc.ServerOption
	// gRPC over TLS when TLS_CERT and TLS_KEY name a PEM certificate chain and key: crypto/tls
	// defaults (TLS 1.2 and 1.3), ALPN h2 (grpc-go requires it of clients).
	cert, key := os.Getenv("TLS_CERT"), os.Getenv("TLS_KEY")
	if cert != "" && key != "" {
		creds, err := credentials.NewServerTLSFromFile(cert, key)
		if err != nil {
			log.Fatal(err)
		}
		opts = append(opts, grpc.Creds(creds))
	}
	// Stop waits for the handlers still running, so the count printed on exit is final.
	opts = append(opts, grpc.WaitForHandlers(true))

	lis, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	pb.RegisterGreeterServer(srv, greeter{})
	reflection.Register(srv)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	stopped := make(chan struct{})
	go func() {
		<-sig
		srv.Stop() // closes the listener and every connection, cancels the calls in flight
		close(stopped)
	}()
	if err := srv.Serve(lis); err != nil {
		log.Fatal(err)
	}
	<-stopped // Serve returns as Stop begins; the count is final once Stop has returned
	fmt.Fprintf(os.Stderr, "calls %d\n", calls.Load())
}
