module github.com/flotilla-dev/flotilla/test/e2e

go 1.26.0
