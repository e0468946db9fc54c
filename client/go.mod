module github.com/flotilla-dev/flotilla/client

go 1.26.0
