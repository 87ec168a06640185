// SPDX-License-Identifier: GPL-2.0-only
// Allocates and calls runtime.GC() N times (default 20): GODEBUG=gctrace=1 is the account.
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
)

var keep [][]byte

func main() {
	rounds := 20
	if len(os.Args) > 1 {
		rounds, _ = strconv.Atoi(os.Args[1])
	}
	fmt.Println(os.Getpid())
	if len(os.Args) > 2 {
		bufio.NewReader(os.Stdin).ReadString('\n')
	}
	for i := 0; i < rounds; i++ {
		keep = make([][]byte, 0, 5000)
		for k := 0; k < 5000; k++ {
			keep = append(keep, make([]byte, 64+k%512))
		}
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
}
