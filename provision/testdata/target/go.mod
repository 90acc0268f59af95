module longhaul.test/target

go 1.22
