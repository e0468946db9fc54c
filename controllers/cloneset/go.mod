module github.com/flotilla-dev/flotilla/controllers/cloneset

go 1.26.0
