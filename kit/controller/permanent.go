package controller

import "errors"

// Permanent marks err as one a retry cannot fix (an invalid spec, a template
// the API server rejects, an update the policy forbids): the object stays as
// it is until someone changes it, and that change enqueues it again. The
// controller reports it where the user looks (a Warning event, a status
// condition) and returns it; the Loop logs it and does not retry it with
// back-off. Permanent(nil) is nil. errors.Is and errors.As see through it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// IsPermanent reports whether err is non-nil and a retry helps none of it:
// every error it joins is permanent.
func IsPermanent(err error) bool { return err != nil && Retryable(err) == nil }

// Retryable returns what of err a retry may fix: nil when err is nil or
// permanent; err itself when nothing in it is permanent; the joined rest when
// err joins permanent and other errors (errors.Join, fmt.Errorf with several
// %w), so a transient error next to a permanent one is still retried. An
// error wrapping a permanent one (fmt.Errorf("pod %s: %w", ...)) is permanent.
func Retryable(err error) error {
	rest, _ := retryable(err)
	return rest
}

// retryable is Retryable that also says whether it dropped anything (errors
// need not be comparable, so the caller cannot tell by ==).
func retryable(err error) (error, bool) {
	switch e := err.(type) {
	case nil:
		return nil, false
	case *permanentError:
		return nil, true
	case interface{ Unwrap() []error }:
		var rest []error
		dropped := false
		for _, c := range e.Unwrap() {
			r, d := retryable(c)
			dropped = dropped || d
			if r != nil {
				rest = append(rest, r)
			}
		}
		if !dropped {
			return err, false
		}
		return errors.Join(rest...), true
	case interface{ Unwrap() error }:
		if r, _ := retryable(e.Unwrap()); r == nil {
			return nil, true
		}
		return err, false
	}
	return err, false
}
