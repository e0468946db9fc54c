package controller

import "errors"

// SlowStart calls fn(i) for i in [0, n) in batches of 1, 2, 4, …, stopping
// after the first batch in which a call failed, as Kubernetes' controllers
// create pods: a quota or admission error costs one request, not n. Within a
// batch at most inFlight calls run at once (at least 1), so a batch of a
// thousand does not arrive at the API server as a thousand concurrent
// requests (API Priority and Fairness answers a flood beyond its queues with
// 429s, each of which is a wasted request and a retry). It returns how many
// calls were made and their errors joined.
func SlowStart(n, inFlight int, fn func(i int) error) (int, error) {
	done := 0
	for batch := 1; done < n; batch *= 2 {
		end := min(done+batch, n)
		idx := make([]int, 0, end-done)
		for i := done; i < end; i++ {
			idx = append(idx, i)
		}
		err := ForEach(idx, inFlight, fn)
		done = end
		if err != nil {
			return done, errors.Join(err)
		}
	}
	return done, nil
}
