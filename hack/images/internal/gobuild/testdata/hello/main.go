// hello is a tiny program for the reproducibility test of gobuild. It imports nothing, so building it with
// an empty build cache compiles only the runtime.
package main

var greeting = "hello"

func main() { println(greeting) }
