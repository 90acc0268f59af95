-- mix.lua drives the demo target with wrk in the shape of the parse mix
-- (DESIGN.md): 40 % session-authenticated list by bucket, 15 % get, 20 % create,
-- 19 % update, 4 % batch of 10, 1 % delete, 1 % login. It needs DEMO_TOKEN,
-- DEMO_USER and DEMO_PASS in the environment (collapse.sh sets them).
local token = os.getenv("DEMO_TOKEN")
local login_body = '{"username":"' .. os.getenv("DEMO_USER") .. '","password":"' .. os.getenv("DEMO_PASS") .. '"}'
local buckets = 100
local max_id = tonumber(os.getenv("DEMO_MAX_ID") or "1")
local headers = { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }
local plain = { ["Content-Type"] = "application/json" }

local batch = {}
for i = 1, 10 do
	batch[i] = '{"bucket":' .. (i % buckets) .. ',"title":"batch ' .. i .. '","payload":{"n":' .. i .. ',"s":"batch item"}}'
end
local batch_body = '{"items":[' .. table.concat(batch, ",") .. ']}'

function setup(thread)
	thread:set("seed", math.random(1, 1e9))
end

function init(args)
	math.randomseed(seed or os.time())
end

request = function()
	local r = math.random(100)
	if r <= 40 then
		return wrk.format("GET", "/items?bucket=" .. math.random(0, buckets - 1) .. "&limit=20", headers)
	elseif r <= 55 then
		return wrk.format("GET", "/items/" .. math.random(1, max_id), headers)
	elseif r <= 75 then
		return wrk.format("POST", "/items", headers,
			'{"bucket":' .. math.random(0, buckets - 1) .. ',"title":"item","payload":{"n":1,"s":"some text here"}}')
	elseif r <= 94 then
		return wrk.format("PUT", "/items/" .. math.random(1, max_id), headers, '{"title":"updated","payload":{"n":2}}')
	elseif r <= 98 then
		return wrk.format("POST", "/items/batch", headers, batch_body)
	elseif r <= 99 then
		return wrk.format("DELETE", "/items/" .. math.random(1, max_id), headers)
	else
		return wrk.format("POST", "/login", plain, login_body)
	end
end

-- Creates answer {"id":N,...}: remember the largest id so gets and updates
-- mostly hit existing rows.
response = function(status, hdrs, body)
	if status == 201 then
		local id = tonumber(string.match(body, '^{"id":(%d+)'))
		if id and id > max_id then
			max_id = id
		end
	end
end
