// The queries docs/query-language.md says must parse and run, shared by the query tests.

/** The examples of docs/query-language.md ("Examples"), verbatim. */
export const LANGUAGE_EXAMPLES = {
  cpuLive: 'from /streams/demo/infrastructure/cpu select user, kernel where user > 90',
  cpuHistorical: 'from historical /streams/demo/infrastructure/cpu where user > @limit select host, user',
  happiness: `from /streams/demo/mobile/happiness
group by contributor.user.typeOfParticipant
select typeOfParticipant, avg(happiness) as avgHappiness, count() as N`,
  location: `from historical /streams/demo/mobile/location
group by contributor, timestamp window of 1 minute every 1 minute
select contributor, timestamp, last(position.latitude) as lat, last(position.longitude) as long`,
  temperature: `from '/streams/demo/iot_board/temperature'
group by contributor, timestamp window of 1 minute every 1 second
select contributor, timestamp, avg(temperature) as Temperature`,
  tweets: `from historical /streams/demo/twitter/tweets
select tweet.user.followers_count as fol, tweet.lang as lang, tweet.source as app
group by app
select app, count() as C, avg(fol) as F
order by F`,
  happinessTake: `from historical /streams/demo/mobile/happiness
select timestamp, happiness order by timestamp take 10000`,
  cpuWindow: 'from /streams/demo/infrastructure/cpu window of 1 hour select count()',
  logInto: `-- two queries of one session, the second reading what the first writes:
from /streams/demo/infrastructure/log1 where host == \`ABC\` into x`,
  logFrom: 'from x where contains(msg, `error`) select host, msg',
} as const;
